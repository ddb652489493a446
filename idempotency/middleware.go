package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Middleware applies idempotency keys to the handlers it wraps. Build one
// with New; it is safe for concurrent use.
type Middleware struct {
	k         *Keeper
	principal func(*http.Request) string
	methods   []string
	required  bool
	strict    bool
	fpHeaders []string
	timeout   time.Duration
	maxReq    int64
	failOpen  bool
	onError   func(*http.Request, error)
}

// New validates cfg and returns a Middleware.
func New(cfg Config) (*Middleware, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	k, err := NewKeeper(cfg.keeper())
	if err != nil {
		return nil, err
	}
	m := &Middleware{
		k:         k,
		principal: cfg.Principal,
		methods:   cfg.Methods,
		required:  cfg.Required,
		strict:    cfg.StrictSyntax,
		fpHeaders: cfg.FingerprintHeaders,
		timeout:   cfg.HandlerTimeout,
		maxReq:    cmp.Or(cfg.MaxRequestBody, DefaultMaxRequestBody),
		failOpen:  cfg.FailOpen,
		onError:   cfg.OnError,
	}
	if m.methods == nil {
		m.methods = []string{http.MethodPost, http.MethodPatch}
	}
	if m.fpHeaders == nil {
		m.fpHeaders = []string{"Content-Type"}
	}
	return m, nil
}

// Drain waits until the store calls the middleware runs in the
// background, after the requests that needed them were answered, have
// ended, or until ctx ends; see Keeper.Drain. Call it after the server
// has shut down (http.Server.Shutdown), before closing the store.
func (m *Middleware) Drain(ctx context.Context) error { return m.k.Drain(ctx) }

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
	var p string
	cctx := r.Context() // of the claims: names the principal to the store
	if m.principal != nil {
		p = m.principal(r)
		cctx = WithPrincipal(cctx, p)
	}
	sk := StoreKey(p, m.principal != nil, key)
	fp := m.fingerprint(r, body)

	c, f, err := m.k.Claim(cctx, sk, fp, m.reporter(r))
	if err != nil {
		if errors.Is(err, ErrStoreFull) {
			// Not an outage: running unprotected would let a flood of
			// keys turn idempotency off for everyone.
			writeProblem(w, http.StatusServiceUnavailable, CodeStoreFull, "the idempotency store has no room for this key now; nothing was done", 1)
			m.report(r, err)
			return
		}
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
		m.run(w, r, next, f, body)
	case Completed:
		if c.Response.Omitted {
			writeProblem(w, http.StatusConflict, CodeReplayUnavailable, "the request with this Idempotency-Key completed, but its response was too large to store", 0)
			return
		}
		replay(w, c.Response)
	default:
		if r.Context().Err() != nil {
			return // the client went away
		}
		writeProblem(w, http.StatusConflict, CodeKeyInFlight, "a request with this Idempotency-Key is still being processed; retry it after the delay in Retry-After", int(InFlightRetryAfter/time.Second))
	}
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
	// One fixed-size hash over the method, the path as the client
	// escaped it (/a%2Fb is not /a/b), the query and the headers,
	// each field written after its length so that no field's bytes can
	// pass for another's, then the body itself when it fits in the buffer
	// or else the body's own hash: nothing is allocated.
	var buf [1024]byte
	// Not the Host: a retry that reaches another instance by its own
	// address, or the service by another name, is the same request.
	b := appendField(buf[:0], r.Method)
	b = appendField(b, escapedPath(r.URL))
	b = appendField(b, r.URL.RawQuery)
	for _, name := range m.fpHeaders {
		vs := r.Header.Values(name)
		b = appendField(b, name)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendField(b, v)
		}
	}
	if len(b)+len(body) < len(buf) {
		b = append(b, 'b')
		b = append(b, body...)
	} else {
		sum := sha256.Sum256(body)
		b = append(b, 'h')
		b = append(b, sum[:]...)
	}
	return sha256.Sum256(b)
}

// appendField appends s to b after its length.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// escapedPath returns the path as the request line had it when the
// server parsed one (RequestURI), else u's escaped form.
func escapedPath(u *url.URL) string {
	if u.RawPath != "" {
		return u.RawPath
	}
	return u.EscapedPath()
}

func (m *Middleware) report(r *http.Request, err error) {
	if m.onError != nil {
		m.onError(r, err)
	}
}

type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// reporter returns what reports a flight's store errors to OnError, if
// set.
func (m *Middleware) reporter(r *http.Request) func(error) {
	if m.onError == nil {
		return nil
	}
	return func(err error) { m.onError(r, err) }
}

// run serves a request that holds the key's lease.
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, f *Flight, body []byte) {
	var ctx context.Context = f
	if m.timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, m.timeout)
		defer c()
	}
	rec := getRecorder(w, f.lease.MaxResponseBody)
	r2 := r.WithContext(ctx)
	if body != nil {
		r2.Body = &bodyReader{*bytes.NewReader(body)}
	}
	returned := false
	defer func() {
		if !returned { // a panic: release the key, let the panic go on
			f.Release()
		}
	}()
	next.ServeHTTP(rec, r2)
	returned = true
	resp := rec.response()
	switch {
	case m.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && !f.lease.Completed():
		f.Release()
		if !rec.streams {
			writeProblem(w, http.StatusServiceUnavailable, CodeHandlerTimeout, "the request took too long and was abandoned; retry it with the same Idempotency-Key", 1)
		}
		putRecorder(rec)
		return
	case resp.Status >= 500:
		f.Release()
	default:
		if err := f.Complete(resp); err != nil {
			m.report(r, err)
		}
	}
	rec.flush()
	putRecorder(rec)
}
