package idempotency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// KeeperConfig configures a Keeper: the store and the times every
// protocol's middleware shares. The zero value keeps records in a new
// Memory store for DefaultTTL, with a DefaultLease and each store call
// bounded by DefaultStoreTimeout.
type KeeperConfig struct {
	// Store keeps the records. Nil means a new Memory store with its
	// defaults, which serves one process only.
	Store Store
	// TTL is how long a completed record is kept. Zero means DefaultTTL.
	TTL time.Duration
	// Lease is how long a claim on a key lasts in a shared store unless
	// renewed; it is renewed every third of its length while the handler
	// runs. Zero means DefaultLease. A Memory store's claims last until
	// the handler returns.
	Lease time.Duration
	// StoreTimeout bounds each call to a shared store. Zero means
	// DefaultStoreTimeout.
	StoreTimeout time.Duration
	// MaxResponseBody is the largest response body stored (Lease.Stored).
	// Zero means DefaultMaxResponseBody.
	MaxResponseBody int64
	// StoreHeader reports whether a response header field is stored. Nil
	// means StorableHeader.
	StoreHeader func(name string) bool
	// Wait is how long a request whose key is in flight, with the same
	// fingerprint, waits for the first to finish: when the first
	// completes, Claim returns its record (Completed) and the duplicate
	// answers with it; when the first releases the key, the duplicate
	// claims it and runs. A duplicate still waiting when Wait ends, or
	// when its own context ends, gets InFlight, which the middleware
	// answers with a status the client retries after a delay
	// (InFlightRetryAfter): HTTP 409 with Retry-After, gRPC UNAVAILABLE
	// with pushback. Zero means DefaultWait; a negative Wait means no
	// wait (InFlight at once).
	Wait time.Duration
}

func (c *KeeperConfig) validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"TTL", c.TTL}, {"Lease", c.Lease}, {"StoreTimeout", c.StoreTimeout}} {
		if f.d < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrInvalidConfig, f.name, f.d)
		}
	}
	if c.MaxResponseBody < 0 {
		return fmt.Errorf("%w: MaxResponseBody %d is negative", ErrInvalidConfig, c.MaxResponseBody)
	}
	if ttl, lease := cmp.Or(c.TTL, DefaultTTL), cmp.Or(c.Lease, DefaultLease); ttl < lease {
		return fmt.Errorf("%w: TTL %v is shorter than Lease %v", ErrInvalidConfig, ttl, lease)
	}
	return nil
}

// Keeper holds idempotency keys in a Store for a server middleware of any
// protocol: it claims a request's key, renews the claim while the handler
// runs, and completes the record with the response or releases it. The
// HTTP Middleware drives one, and so does unherdgrpc's server
// interceptor; a middleware for another protocol needs only this:
//
//	c, f, err := k.Claim(ctx, idempotency.StoreKey(principal, true, key), fingerprint, report)
//	// c.State Acquired: run the handler under f (a context), then
//	f.Complete(resp) // or f.Release() when the client should retry
//	// Completed: answer c.Response; InFlight: ask the client to wait
//
// A Keeper is safe for concurrent use.
type Keeper struct {
	store        Store
	local        bool // the store is a *Memory
	ttl          time.Duration
	lease        time.Duration
	storeTimeout time.Duration
	maxResp      int64
	storeHeader  func(string) bool
	wait         time.Duration // negative: none
	retries      *retry.Policy // of completions and releases that failed
	polls        atomic.Uint64

	mu    sync.Mutex
	calls map[string]*claimCall // shared stores' claims in progress, by key

	// flights holds this Keeper's flights by key, so that a duplicate in
	// the same process learns at once that the first has ended, instead
	// of at its next look at the store.
	flights flightIndex

	// bg counts the store calls run in the background, after the request
	// that needed them has been answered (Drain).
	bg background
}

// background counts goroutines and closes a channel when none is left,
// so that a wait for them can end with a context without leaving a
// goroutine behind, as a sync.WaitGroup's Wait would.
type background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while n is zero
}

// Go runs f in a goroutine of its own, counted until f returns.
func (b *background) Go(f func()) {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	b.mu.Unlock()
	go func() {
		defer b.done()
		f()
	}()
}

func (b *background) done() {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.idle)
		b.idle = nil
	}
	b.mu.Unlock()
}

// Wait returns nil when no goroutine of b's is running, or ctx's cause
// if ctx ends first.
func (b *background) Wait(ctx context.Context) error {
	b.mu.Lock()
	idle := b.idle
	b.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// flightIndex is a Keeper's flights by key, sharded so that requests for
// different keys rarely share a lock; its maps keep their room when
// flights end, so registering one allocates nothing once warm.
type flightIndex struct {
	seed   maphash.Seed
	shards [16]struct {
		mu sync.Mutex
		m  map[string]*Flight
		_  [48]byte // a shard per cache line: no false sharing
	}
}

func (x *flightIndex) shard(key string) (*sync.Mutex, *map[string]*Flight) {
	sh := &x.shards[maphash.String(x.seed, key)%uint64(len(x.shards))]
	return &sh.mu, &sh.m
}

func (x *flightIndex) add(f *Flight) {
	mu, m := x.shard(f.lease.Key)
	mu.Lock()
	if *m == nil {
		*m = make(map[string]*Flight)
	}
	(*m)[f.lease.Key] = f
	mu.Unlock()
}

func (x *flightIndex) remove(f *Flight) {
	mu, m := x.shard(f.lease.Key)
	mu.Lock()
	if (*m)[f.lease.Key] == f {
		delete(*m, f.lease.Key)
	}
	mu.Unlock()
}

func (x *flightIndex) get(key string) *Flight {
	mu, m := x.shard(key)
	mu.Lock()
	defer mu.Unlock()
	return (*m)[key]
}

// NewKeeper validates cfg, fills in its defaults and returns a Keeper.
// Every error wraps ErrInvalidConfig.
func NewKeeper(cfg KeeperConfig) (*Keeper, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	k := &Keeper{
		store:        cfg.Store,
		ttl:          cmp.Or(cfg.TTL, DefaultTTL),
		lease:        cmp.Or(cfg.Lease, DefaultLease),
		storeTimeout: cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout),
		maxResp:      cmp.Or(cfg.MaxResponseBody, DefaultMaxResponseBody),
		storeHeader:  cfg.StoreHeader,
		wait:         cmp.Or(cfg.Wait, DefaultWait),
	}
	k.flights.seed = maphash.MakeSeed()
	var err error
	if k.retries, err = persistPolicy(k.storeTimeout); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if k.store == nil {
		s, err := NewMemory(MemoryConfig{})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		k.store = s
	}
	_, k.local = k.store.(*Memory)
	return k, nil
}

// localLease is the lease of a claim in a Memory store: until the
// handler returns. A Memory store dies with the process that holds its
// leases, so no lease needs to outlive a crash.
const localLease = time.Duration(1 << 62)

// Flight is one request's hold on its key, from claim to completion. It
// is the context the handler runs under once the claim is acquired: it
// carries the Lease (LeaseFromContext) and is cancelled, with the store's
// error as its cause, if a renewal finds the lease lost. Its methods are
// called by the one goroutine serving the request.
type Flight struct {
	context.Context
	k      *Keeper
	report func(error)
	lease  Lease
	cancel context.CancelCauseFunc
	rn     renewer

	endMu sync.Mutex
	ended bool
	endCh chan struct{} // made by the first duplicate that waits; closed at the end
}

// Value returns the flight's Lease for LeaseFromContext, without a
// context.WithValue.
func (f *Flight) Value(key any) any {
	if key == (leaseKey{}) {
		return &f.lease
	}
	return f.Context.Value(key)
}

// Lease returns the flight's lease: its key and, once acquired, its token.
func (f *Flight) Lease() *Lease { return &f.lease }

// storeCtx bounds a store call; it outlives the client's request, so
// that a client that hangs up does not leave a record half done. Calls
// to the Memory store, which never wait, are not bounded.
func (k *Keeper) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.local {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), k.storeTimeout)
}

// Claim claims key (a StoreKey) for a request of fingerprint fp, served
// under ctx, each store call within the store timeout. When the claim is
// Acquired, the returned Flight holds the key: its renewals run, the
// handler runs under it, and it must end with Complete or Release.
//
// When the key is in flight for a request of the same fingerprint, Claim
// waits for it, up to the Keeper's Wait (KeeperConfig.Wait) and while
// ctx lasts: the first request's end wakes a duplicate in the same
// process at once, and a duplicate of a request that another process
// serves looks at the store again after pauses that grow from 10 ms to
// 250 ms. It returns the record once completed (Completed), or the claim
// once released (Acquired, the duplicate now runs); InFlight once the
// wait is over, which the caller answers with a status the client
// retries after InFlightRetryAfter. A key in flight or completed for
// another fingerprint is returned at once.
//
// report, if not nil, receives the store errors the flight cannot
// return: a renewal that failed, a release that failed, a claim whose
// outcome was not known and could not be released. A claim that failed
// after it may have reached the store (the store returned the token it
// drew with the error) is released by that token in the background, so
// that a claim that did take effect does not hold the key for a whole
// lease.
func (k *Keeper) Claim(ctx context.Context, key string, fp Fingerprint, report func(error)) (Claim, *Flight, error) {
	var deadline time.Time // of the wait, set at the first InFlight
	gap := 10 * time.Millisecond
	for {
		c, f, err := k.claim(ctx, key, fp, report)
		if err != nil || c.State != InFlight || c.Fingerprint != fp || k.wait < 0 {
			return c, f, err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(k.wait)
		}
		left := deadline.Sub(now)
		if left <= 0 || !k.await(ctx, key, min(k.spread(gap), left)) {
			return c, nil, nil
		}
		gap = min(2*gap, maxWaitGap)
	}
}

// maxWaitGap caps the pause between two looks at the store of a
// duplicate waiting for a request that another process serves.
const maxWaitGap = 250 * time.Millisecond

// await waits d, or until this Keeper's flight of key (if it has one)
// ends, whichever comes first, and reports false if ctx ended first.
func (k *Keeper) await(ctx context.Context, key string, d time.Duration) bool {
	var ended <-chan struct{}
	if f := k.flights.get(key); f != nil {
		ended = f.endedCh()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ended:
	case <-ctx.Done():
		return false
	}
	return true
}

// claim is one claim of key: Claim without the wait.
func (k *Keeper) claim(ctx context.Context, key string, fp Fingerprint, report func(error)) (Claim, *Flight, error) {
	var c Claim
	var err error
	if k.local {
		c, err = k.store.Claim(ctx, key, fp, localLease)
	} else {
		var shared bool
		c, shared, err = k.claimOnce(ctx, key, fp)
		switch {
		case shared:
			return c, nil, err
		case err != nil:
			k.unclaim(ctx, key, c.Token, err, report)
			return c, nil, err
		}
	}
	if err == nil && c.State == Acquired {
		f := &Flight{Context: ctx, k: k, report: report, lease: Lease{Key: key, Token: c.Token, TTL: k.ttl, MaxResponseBody: k.maxResp, StoreHeader: k.storeHeader}}
		f.hold()
		return c, f, nil
	}
	return c, nil, err
}

// endedCh returns a channel closed when the flight ends.
func (f *Flight) endedCh() <-chan struct{} {
	f.endMu.Lock()
	defer f.endMu.Unlock()
	if f.endCh == nil {
		f.endCh = make(chan struct{})
		if f.ended {
			close(f.endCh)
		}
	}
	return f.endCh
}

// end marks the flight ended, once its completion or release has
// reached the store (or been handed to the background), and wakes the
// duplicates of this process that wait for it.
func (f *Flight) end() {
	f.endMu.Lock()
	defer f.endMu.Unlock()
	if f.ended {
		return
	}
	f.ended = true
	f.k.flights.remove(f)
	if f.endCh != nil {
		close(f.endCh)
	}
}

// claimCall is a shared store's Claim of one key in progress, which the
// process's other requests for the key wait for instead of asking too.
type claimCall struct {
	done chan struct{}
	fp   Fingerprint
	c    Claim
	err  error
}

// claimOnce claims key in a shared store, at most one call per key in
// the process at a time: a request that finds a call in progress waits
// for its answer (shared is true) rather than adding its own to the
// store's queue for the key's record. A burst of duplicates, or of
// waiters polling a key in flight, then costs the store one claim per
// process at a time, which keeps claims within the store timeout while
// the store is busy. The answer a waiter gets is the one the store would
// have given it: InFlight with the winner's fingerprint when the call
// acquired the key, else the call's own answer, without its token. The
// store call is bounded by the store timeout, not by the request that
// made it, since others wait for it.
func (k *Keeper) claimOnce(ctx context.Context, key string, fp Fingerprint) (c Claim, shared bool, err error) {
	k.mu.Lock()
	if cc, ok := k.calls[key]; ok {
		k.mu.Unlock()
		select {
		case <-cc.done:
		case <-ctx.Done():
			return Claim{}, true, context.Cause(ctx)
		}
		switch {
		case cc.err != nil:
			return Claim{}, true, cc.err
		case cc.c.State == Acquired:
			return Claim{State: InFlight, Fingerprint: cc.fp}, true, nil
		}
		return cc.c, true, nil
	}
	cc := &claimCall{done: make(chan struct{}), fp: fp}
	if k.calls == nil {
		k.calls = make(map[string]*claimCall)
	}
	k.calls[key] = cc
	k.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.storeTimeout)
	cc.c, cc.err = k.store.Claim(sctx, key, fp, k.lease)
	cancel()
	k.mu.Lock()
	delete(k.calls, key)
	k.mu.Unlock()
	close(cc.done)
	return cc.c, false, cc.err
}

// hold makes the flight the handler's context and, for a shared store,
// starts the renewals.
func (f *Flight) hold() {
	f.k.flights.add(f)
	if f.k.local {
		// A Memory record lives and dies with this process and is claimed
		// until its handler returns: it needs no renewal.
		return
	}
	f.Context, f.cancel = context.WithCancelCause(f.Context)
	f.rn = renewer{f: f}
	f.rn.mu.Lock() // renew reads t under mu
	f.rn.t = time.AfterFunc(f.k.lease/3, f.rn.renew)
	f.rn.mu.Unlock()
}

// Stop stops the renewals, waiting for one in progress, and returns an
// error wrapping ErrLeaseLost if a renewal found the lease lost while
// the handler ran: another claim may hold the key now. Complete and
// Release stop the renewals themselves.
func (f *Flight) Stop() error {
	err := f.rn.stop()
	if f.cancel != nil {
		f.cancel(nil)
	}
	return err
}

// Complete stores resp as the outcome of the flight's request (what
// Lease.Stored keeps of it) and ends the flight. A completion that fails
// is tried again, after pauses spread between half and all of a ceiling
// that doubles from 10 ms up to a second (so that the handlers a store
// outage failed together do not retry together, and all of them land
// soon after the store is back), for up to a lease, while the lease is
// still renewed every third of its length, so that a store slow to take
// the completion does not let the key run again: a completion lost for
// good (or a lease the store let run out) leaves the record in flight,
// and the key runs again once its lease expires. A handler that completed the record
// itself (Lease.MarkCompleted) is not completed again. Complete returns
// an error wrapping ErrLeaseLost if the lease was lost while the handler
// ran; nothing is stored then.
func (f *Flight) Complete(resp *Response) error {
	defer f.end()
	if err := f.rn.lostErr(); err != nil {
		f.Stop()
		return fmt.Errorf("idempotency: key %q: the lease was lost while the handler ran; its response was not stored: %w", f.lease.Key, err)
	}
	if f.lease.Completed() {
		f.Stop()
		return nil
	}
	// The renewals go on while the completion is tried, so that a store
	// slow to take it does not let the lease run out and the key run
	// again; a renewal that finds the lease lost ends the tries.
	stored := f.lease.Stored(resp)
	err := f.k.persist(f.Context, f.k.lease, func(ctx context.Context) error {
		if err := f.rn.lostErr(); err != nil {
			return err
		}
		return f.k.store.Complete(ctx, f.lease.Key, f.lease.Token, stored, f.k.ttl)
	})
	f.Stop()
	if err != nil {
		return fmt.Errorf("idempotency: key %q: completing the record: %w", f.lease.Key, err)
	}
	return nil
}

// Release ends the flight without an outcome, so that the client's retry
// runs the handler again, unless the handler completed the record itself
// or the lease was lost. A release that fails is tried again in the
// background, as a completion is, for up to a lease: until it lands the
// key is in flight (duplicates wait, then are asked to come back), and a
// release lost for good leaves it so until the lease expires. An error
// is given to the flight's report.
func (f *Flight) Release() {
	defer f.end()
	if f.Stop() != nil || f.lease.Completed() {
		return // another claim may hold the key; or there is an outcome
	}
	k, key, token := f.k, f.lease.Key, f.lease.Token
	ctx, cancel := k.storeCtx(f.Context)
	err := k.store.Release(ctx, key, token)
	cancel()
	switch {
	case err == nil:
		return
	case errors.Is(err, ErrLeaseLost) || k.local:
		f.fail(fmt.Errorf("idempotency: key %q: releasing the record: %w", key, err))
		return
	}
	k.bg.Go(func() {
		err := k.persist(f.Context, k.lease, func(ctx context.Context) error { return k.store.Release(ctx, key, token) })
		if err != nil {
			f.fail(fmt.Errorf("idempotency: key %q: releasing the record: %w", key, err))
		}
	})
}

func (f *Flight) fail(err error) {
	if f.report != nil {
		f.report(err)
	}
}

// unclaim resolves a claim whose outcome the Keeper did not learn: Claim
// failed (its store timeout passed, or the connection broke) after the
// claim may have reached the store, and the store returned the token it
// drew (see Store). If the claim did take effect, nobody holds the record
// it made, and the key would answer 409 until its lease ran out; unclaim
// releases it by its token, in the background and again while the store
// does not answer, until a lease has passed (when the record, if any, has
// expired anyway). A release that finds no record of the token's is the
// common answer: the claim never took effect. It is not final until a
// store timeout after the claim was given up, though: the claim's
// request may still be on its way to the store when the release,
// sent on another connection, overtakes it (a connection broken under
// the claim after it was sent), and the claim lands after the release
// found nothing. A release that finds nothing earlier is sent once more
// then.
func (k *Keeper) unclaim(ctx context.Context, key string, token uint64, cause error, report func(error)) {
	if token == 0 {
		return // the store knows the claim did not take effect
	}
	settled := time.Now().Add(k.storeTimeout)
	k.bg.Go(func() {
		err := k.persist(ctx, k.lease, func(ctx context.Context) error {
			err := k.store.Release(ctx, key, token)
			if left := time.Until(settled); left > 0 && errors.Is(err, ErrLeaseLost) {
				return retry.Judge(errClaimUnsettled, retry.Verdict{Class: failure.Transient, Delay: left, HasDelay: true})
			}
			return err
		})
		if err != nil && !errors.Is(err, ErrLeaseLost) && report != nil {
			report(fmt.Errorf("idempotency: key %q: releasing a claim whose outcome was not known (%w): %w", key, cause, err))
		}
	})
}

// errClaimUnsettled is a release of a claim whose outcome was not known
// that found no record before the claim could have landed.
var errClaimUnsettled = errors.New("idempotency: no record of the claim yet; it may still be on its way to the store")

// Drain waits until the store calls the Keeper runs in the background
// have ended, or until ctx ends, and returns ctx's cause then. Those
// calls outlive the requests that needed them: a release tried again
// after it failed (Flight.Release), and the release of a claim whose
// answer was lost (Claim), each for up to a lease while the store fails.
// Call it when the server shuts down, after its last request, before
// closing the store, so that no record is left in flight for a lease.
func (k *Keeper) Drain(ctx context.Context) error {
	if err := k.bg.Wait(ctx); err != nil {
		return fmt.Errorf("idempotency: background store calls still running: %w", err)
	}
	return nil
}

// persist calls op until it succeeds or finds the lease lost, or until
// within has passed, through the Keeper's retry policy (persistPolicy).
// It outlives the client's request: ctx's cancellation, and any mark
// that an outer layer retries, are dropped.
func (k *Keeper) persist(ctx context.Context, within time.Duration, op func(context.Context) error) error {
	if k.local {
		// A Memory store never waits, and fails only when the lease is
		// lost: there is nothing to try again.
		return op(ctx)
	}
	ctx, cancel := context.WithTimeout(retry.WithoutOuterRetry(context.WithoutCancel(ctx)), within)
	defer cancel()
	return k.retries.Do(ctx, op)
}

// persistPolicy is how a Keeper tries again a completion or a release
// that failed: pauses spread between half and all of a ceiling that
// doubles from 10 ms up to a second (so that the requests a store outage
// failed together do not call it together again, and all of them land
// soon after the store is back), each call bounded by the store timeout,
// as many tries as the time given allows, with no budget (a completion
// is the one execution's answer, never extra load to shed), and a lost
// lease final.
func persistPolicy(storeTimeout time.Duration) (*retry.Policy, error) {
	return retry.New(retry.Config{
		MaxAttempts:    1 << 20, // the time given bounds them
		Backoff:        backoff.Schedule{Base: 10 * time.Millisecond, Cap: maxPersistGap, Jitter: backoff.Equal},
		AttemptTimeout: storeTimeout,
		// A release that found no record of a claim not yet settled waits
		// for the claim to settle (unclaim), however long a store timeout.
		ClampServerDelay: true,
		// A completion given up leaves the key to run again once its lease
		// expires; the requests in progress when the store failed bound
		// this load, as new claims fail at once.
		Budget: budget.Unlimited, //unherdvet:ignore misuse a completion given up is a second execution
		Classify: func(err error) failure.Class {
			if errors.Is(err, ErrLeaseLost) {
				return failure.Permanent
			}
			return engine.DefaultClassify(err)
		},
	})
}

// maxPersistGap caps the pause between two tries of a completion or a
// release, so that all of those a store outage failed land soon after
// the store is back.
const maxPersistGap = time.Second

// spread returns a pause between d/2 and d, a different one for each
// call: requests that a store failed together, or duplicates that arrived
// together, do not call the store together again. The fractions come
// from a golden-ratio sequence over the calls, not from a random source,
// so runs are repeatable.
func (k *Keeper) spread(d time.Duration) time.Duration {
	x := float64((k.polls.Add(1)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	return d/2 + time.Duration(x*float64(d/2))
}

// renewer renews a lease every third of its length until stopped. A
// renewal that finds the lease lost cancels the handler's context; one
// that fails otherwise is tried again after a sixth of the lease.
type renewer struct {
	f       *Flight
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	lost    error
}

func (rn *renewer) renew() {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.stopped || rn.lost != nil {
		return
	}
	f := rn.f
	ctx, cancel := f.k.storeCtx(f.Context)
	err := f.k.store.Renew(ctx, f.lease.Key, f.lease.Token, f.k.lease)
	cancel()
	switch {
	case errors.Is(err, ErrLeaseLost):
		rn.lost = err
		f.cancel(err)
		return
	case err != nil:
		// The store may be back before the lease runs out: try again
		// sooner.
		f.fail(fmt.Errorf("idempotency: key %q: renewing the lease: %w", f.lease.Key, err))
		rn.t.Reset(f.k.lease / 6)
		return
	}
	rn.t.Reset(f.k.lease / 3)
}

// lostErr returns the error of a renewal that found the lease lost, or
// nil.
func (rn *renewer) lostErr() error {
	if rn.t == nil {
		return nil // never started
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.lost
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
