package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/internal/pause"
)

// Middleware applies idempotency keys to the handlers it wraps. Build one
// with New; it is safe for concurrent use.
type Middleware struct {
	store        Store
	principal    func(*http.Request) string
	methods      []string
	required     bool
	strict       bool
	fpHeaders    []string
	ttl          time.Duration
	lease        time.Duration
	wait         time.Duration
	timeout      time.Duration
	maxReq       int64
	maxResp      int64
	storeTimeout time.Duration
	failOpen     bool
	onError      func(*http.Request, error)
	local        bool // the store is a *Memory
	polls        atomic.Uint64
}

// New validates cfg and returns a Middleware.
func New(cfg Config) (*Middleware, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Middleware{
		store:        cfg.Store,
		principal:    cfg.Principal,
		methods:      cfg.Methods,
		required:     cfg.Required,
		strict:       cfg.StrictSyntax,
		fpHeaders:    cfg.FingerprintHeaders,
		ttl:          cmp.Or(cfg.TTL, DefaultTTL),
		lease:        cmp.Or(cfg.Lease, DefaultLease),
		wait:         cfg.Wait,
		timeout:      cfg.HandlerTimeout,
		maxReq:       cmp.Or(cfg.MaxRequestBody, DefaultMaxRequestBody),
		maxResp:      cmp.Or(cfg.MaxResponseBody, DefaultMaxResponseBody),
		storeTimeout: cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout),
		failOpen:     cfg.FailOpen,
		onError:      cfg.OnError,
	}
	if m.ttl < m.lease {
		return nil, fmt.Errorf("%w: TTL %v is shorter than Lease %v", ErrInvalidConfig, m.ttl, m.lease)
	}
	if m.methods == nil {
		m.methods = []string{http.MethodPost, http.MethodPatch}
	}
	if m.fpHeaders == nil {
		m.fpHeaders = []string{"Content-Type"}
	}
	if m.store == nil {
		s, err := NewMemory(MemoryConfig{})
		if err != nil {
			return nil, err
		}
		m.store = s
	}
	_, m.local = m.store.(*Memory)
	return m, nil
}

// Handler returns next wrapped by the middleware.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !slices.Contains(m.methods, r.Method) {
		next.ServeHTTP(w, r)
		return
	}
	vs := r.Header.Values(KeyHeader)
	if len(vs) == 0 {
		if m.required {
			writeProblem(w, http.StatusBadRequest, CodeKeyMissing, "this request needs an Idempotency-Key header", 0)
			return
		}
		next.ServeHTTP(w, r)
		return
	}
	key, err := ParseKey(strings.Join(vs, ", "), !m.strict)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, CodeKeyMalformed, err.Error(), 0)
		return
	}
	body, err := m.readBody(r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeProblem(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, err.Error(), 0)
			return
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	sk := key
	if m.principal != nil {
		p := m.principal(r)
		sk = strconv.Itoa(len(p)) + ":" + p + key
	}
	fp := m.fingerprint(r, body)

	var deadline time.Time // of the wait, set at the first in-flight answer
	gap := 10 * time.Millisecond
	for {
		c, err := m.claim(r.Context(), sk, fp)
		if err != nil {
			m.unclaim(r, sk, c.Token, err)
			if m.failOpen {
				m.report(r, err)
				next.ServeHTTP(w, withBody(r, body))
				return
			}
			writeProblem(w, http.StatusServiceUnavailable, CodeStoreUnavailable, "the idempotency store could not be reached; nothing was done", 1)
			m.report(r, err)
			return
		}
		if c.State != Acquired && c.Fingerprint != fp {
			writeProblem(w, http.StatusUnprocessableEntity, CodeKeyMismatch, "this Idempotency-Key was used with a different request", 0)
			return
		}
		switch c.State {
		case Acquired:
			m.run(w, r, next, sk, c.Token, body)
			return
		case Completed:
			if c.Response.Omitted {
				writeProblem(w, http.StatusConflict, CodeReplayUnavailable, "the request with this Idempotency-Key completed, but its response was too large to store", 0)
				return
			}
			replay(w, c.Response)
			return
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(m.wait)
		}
		left := time.Until(deadline)
		if left <= 0 {
			writeProblem(w, http.StatusConflict, CodeKeyInFlight, "a request with this Idempotency-Key is still being processed", 1)
			return
		}
		if !pause.For(r.Context(), min(m.spread(gap), left)) {
			return // the client went away
		}
		gap = min(2*gap, 250*time.Millisecond)
	}
}

// spread returns a gap between d/2 and d, a different one for each
// call: duplicates that arrived together do not poll the store together.
// The fractions come from a golden-ratio sequence over the calls, not from
// a random source, so runs are repeatable.
func (m *Middleware) spread(d time.Duration) time.Duration {
	f := float64((m.polls.Add(1)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	return d/2 + time.Duration(f*float64(d/2))
}

func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.maxReq {
		return nil, &http.MaxBytesError{Limit: m.maxReq}
	}
	if r.ContentLength >= 0 {
		// The common case: read exactly the announced length, then make
		// sure nothing follows.
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		var one [1]byte
		if n, _ := r.Body.Read(one[:]); n > 0 {
			return nil, errors.New("body longer than its Content-Length")
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, m.maxReq+1))
	if err == nil && int64(len(b)) > m.maxReq {
		err = &http.MaxBytesError{Limit: m.maxReq}
	}
	return b, err
}

func withBody(r *http.Request, body []byte) *http.Request {
	if body == nil {
		return r
	}
	r2 := *r
	r2.Body = io.NopCloser(bytes.NewReader(body))
	return &r2
}

func (m *Middleware) fingerprint(r *http.Request, body []byte) Fingerprint {
	// One fixed-size hash over the method, path, query and headers, then
	// the body itself when it fits in the buffer or else the body's own
	// hash: nothing is allocated.
	var buf [1024]byte
	b := append(buf[:0], r.Method...)
	b = append(b, 0)
	b = append(b, r.URL.Path...)
	b = append(b, '?')
	b = append(b, r.URL.RawQuery...)
	for _, name := range m.fpHeaders {
		b = append(b, 0)
		b = append(b, name...)
		for _, v := range r.Header.Values(name) {
			b = append(b, 0)
			b = append(b, v...)
		}
	}
	b = append(b, 0)
	if len(b)+len(body) <= len(buf) {
		b = append(b, 'b')
		b = append(b, body...)
	} else {
		sum := sha256.Sum256(body)
		b = append(b, 'h')
		b = append(b, sum[:]...)
	}
	return sha256.Sum256(b)
}

// storeCtx bounds a store call; it outlives the client's request, so
// that a client that hangs up does not leave a record half done. Calls
// to the Memory store, which never wait, are not bounded.
func (m *Middleware) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.local {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), m.storeTimeout)
}

func (m *Middleware) claim(ctx context.Context, key string, fp Fingerprint) (Claim, error) {
	if !m.local {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.storeTimeout)
		defer cancel()
	}
	lease := m.lease
	if m.local {
		lease = localLease
	}
	return m.store.Claim(ctx, key, fp, lease)
}

func (m *Middleware) report(r *http.Request, err error) {
	if m.onError != nil {
		m.onError(r, err)
	}
}

// localLease is the lease of a claim in a Memory store: until the
// handler returns. A Memory store dies with the process that holds its
// leases, so no lease needs to outlive a crash.
const localLease = time.Duration(1 << 62)

// flight is the state of a request that holds its key's lease, in one
// allocation: the handler's context (which carries the Lease and may
// outlive the request) and the lease renewal.
type flight struct {
	context.Context // the request's, cancellable on a lost lease
	lease           Lease
	rn              renewer
	body            bodyReader
}

// Value returns the lease for LeaseFromContext, without a context.WithValue.
func (f *flight) Value(key any) any {
	if key == (leaseKey{}) {
		return &f.lease
	}
	return f.Context.Value(key)
}

type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// run serves a request that holds the key's lease.
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, key string, token uint64, body []byte) {
	f := &flight{lease: Lease{Key: key, Token: token, TTL: m.ttl, MaxResponseBody: m.maxResp}}
	lease := &f.lease
	ctx := r.Context()
	rn := &f.rn
	if !m.local {
		// A Memory record lives and dies with this process and is claimed
		// until its handler returns: it needs no renewal.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		*rn = renewer{m: m, r: r, key: key, token: token, cancel: cancel}
		rn.mu.Lock() // renew reads rn.t under mu
		rn.t = time.AfterFunc(m.lease/3, rn.renew)
		rn.mu.Unlock()
	}
	if m.timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, m.timeout)
		defer c()
	}
	f.Context = ctx
	rec := getRecorder(w, m.maxResp)
	r2 := r.WithContext(f)
	if body != nil {
		f.body.Reset(body)
		r2.Body = &f.body
	}
	returned := false
	defer func() {
		if !returned { // a panic: release the key, let the panic go on
			rn.stop()
			m.release(r, key, token)
		}
	}()
	next.ServeHTTP(rec, r2)
	returned = true
	lost := rn.stop()
	resp := rec.response()
	switch {
	case m.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && !lease.completed.Load():
		m.release(r, key, token)
		if !rec.streams {
			writeProblem(w, http.StatusServiceUnavailable, CodeHandlerTimeout, "the request took too long and was abandoned; retry it with the same Idempotency-Key", 1)
		}
		putRecorder(rec)
		return
	case lost != nil:
		m.report(r, fmt.Errorf("idempotency: key %q: the lease was lost while the handler ran; its response was not stored: %w", key, lost))
	case resp.Status >= 500 && !lease.completed.Load():
		m.release(r, key, token)
	case !lease.completed.Load():
		stored := resp
		if rec.streams {
			stored = &Response{Status: resp.Status, Header: resp.Header, Omitted: true}
		}
		if err := m.complete(r, key, token, stored); err != nil {
			m.report(r, fmt.Errorf("idempotency: key %q: completing the record: %w", key, err))
		}
	}
	rec.flush()
	putRecorder(rec)
}

// complete stores the outcome. A completion that fails is tried again,
// after pauses spread between half and all of a ceiling that doubles from
// 10 ms up to maxPersistGap (so that the handlers a store outage failed
// together do not retry together, and all of them land soon after the
// store is back), for up to half a lease (the lease,
// renewed last when the handler returned, keeps the key meanwhile): a
// completion lost for good leaves the record in flight, and the key runs
// again once its lease expires.
func (m *Middleware) complete(r *http.Request, key string, token uint64, resp *Response) error {
	return m.persist(r, m.lease/2, func(ctx context.Context) error {
		return m.store.Complete(ctx, key, token, resp, m.ttl)
	})
}

// persist calls op, each call bounded by the store timeout, until it
// succeeds or finds the lease lost, or until within has passed since the
// first failure.
func (m *Middleware) persist(r *http.Request, within time.Duration, op func(context.Context) error) error {
	var deadline time.Time // set at the first failure
	gap := 10 * time.Millisecond
	for {
		ctx, cancel := m.storeCtx(r.Context())
		err := op(ctx)
		cancel()
		if err == nil || errors.Is(err, ErrLeaseLost) {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(within)
		}
		d := m.spread(gap)
		if time.Now().Add(d).After(deadline) {
			return err
		}
		time.Sleep(d)
		gap = min(2*gap, maxPersistGap)
	}
}

// maxPersistGap caps the pause between two tries of a completion or a
// release.
const maxPersistGap = time.Second

// release releases the record, so that a retry runs again. A release
// that fails is tried again in the background, as a completion is, for
// up to a lease: until it lands the key answers 409, and a release lost
// for good leaves it so until the lease expires.
func (m *Middleware) release(r *http.Request, key string, token uint64) {
	ctx, cancel := m.storeCtx(r.Context())
	err := m.store.Release(ctx, key, token)
	cancel()
	switch {
	case err == nil:
		return
	case errors.Is(err, ErrLeaseLost) || m.local:
		m.report(r, fmt.Errorf("idempotency: key %q: releasing the record: %w", key, err))
		return
	}
	go func() {
		err := m.persist(r, m.lease, func(ctx context.Context) error { return m.store.Release(ctx, key, token) })
		if err != nil {
			m.report(r, fmt.Errorf("idempotency: key %q: releasing the record: %w", key, err))
		}
	}()
}

// renewer renews a lease every third of its length until stopped. A
// renewal that finds the lease lost cancels the handler's context.
type renewer struct {
	m      *Middleware
	r      *http.Request
	key    string
	token  uint64
	cancel context.CancelCauseFunc
	t      *time.Timer

	mu      sync.Mutex
	stopped bool
	lost    error
}

func (rn *renewer) renew() {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.stopped || rn.lost != nil {
		return
	}
	ctx, cancel := rn.m.storeCtx(rn.r.Context())
	err := rn.m.store.Renew(ctx, rn.key, rn.token, rn.m.lease)
	cancel()
	switch {
	case errors.Is(err, ErrLeaseLost):
		rn.lost = err
		rn.cancel(err)
		return
	case err != nil:
		// The store may be back before the lease runs out: try again
		// sooner.
		rn.m.report(rn.r, fmt.Errorf("idempotency: key %q: renewing the lease: %w", rn.key, err))
		rn.t.Reset(rn.m.lease / 6)
		return
	}
	rn.t.Reset(rn.m.lease / 3)
}

// stop stops the renewals, waiting for one in progress, and returns the
// error of a renewal that found the lease lost.
func (rn *renewer) stop() error {
	if rn.t == nil {
		return nil // never started
	}
	rn.t.Stop()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.stopped = true
	return rn.lost
}
