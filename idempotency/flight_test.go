package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/idempotency/storetest"
	"github.com/unherd/unherd/internal/configtest"
)

// A claim that took effect in the store but whose answer was lost (it
// timed out on the middleware's side, or its connection broke) does not
// hold the key for its lease: the client's retry, moments later, runs.
// So too when the release sent at once overtakes the claim and finds no
// record: the claim is looked for again once it can no longer be on its
// way.
func TestAmbiguousClaimReleased(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(idempotency.Store) (idempotency.Store, *atomic.Bool)
	}{
		{"timed out", func(m idempotency.Store) (idempotency.Store, *atomic.Bool) {
			s := &storetest.LostAnswers{Store: m}
			return s, &s.Lose
		}},
		{"overtaken by its release", func(m idempotency.Store) (idempotency.Store, *atomic.Bool) {
			s := &overtaken{Store: m}
			return s, &s.lose
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store, lose := tc.store(newMemory(t, idempotency.MemoryConfig{}))
				var runs atomic.Int32
				h := newHandler(t, idempotency.Config{Store: store, StoreTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					runs.Add(1)
					w.WriteHeader(http.StatusCreated)
				}))
				send := func() int { return do(h, http.MethodPost, "/", "k", "x").Code }
				lose.Store(true)
				if code := send(); code != http.StatusServiceUnavailable {
					t.Fatalf("a claim whose answer was lost: %d, want 503", code)
				}
				lose.Store(false)
				time.Sleep(time.Second) // the client's backoff
				synctest.Wait()
				if code := send(); code != http.StatusCreated || runs.Load() != 1 {
					t.Errorf("the retry 1s later: %d after %d runs, want 201 from its own run (not 409 for the lease)", code, runs.Load())
				}
			})
		})
	}
}

// overtaken is a shared store whose claims, while lose is set, take
// effect but answer with a broken connection, and whose first release of
// such a claim comes too early: sent at once on a connection of its own,
// it reaches the store before the claim, finds no record and says the
// lease is lost.
type overtaken struct {
	idempotency.Store
	lose     atomic.Bool
	early    atomic.Uint64 // the token of a claim a release overtakes, once
	releases atomic.Int32
}

func (s *overtaken) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	c, err := s.Store.Claim(ctx, key, fp, lease)
	if err != nil || !s.lose.Load() {
		return c, err
	}
	s.early.Store(c.Token)
	return idempotency.Claim{Token: c.Token}, errors.New("connection reset by peer")
}

func (s *overtaken) Release(ctx context.Context, key string, token uint64) error {
	s.releases.Add(1)
	if token != 0 && s.early.CompareAndSwap(token, 0) {
		return idempotency.ErrLeaseLost // the claim has not landed yet
	}
	return s.Store.Release(ctx, key, token)
}

// slowStore is a shared store whose claims take a while, counting the
// claims in progress at once.
type slowStore struct {
	*idempotency.Memory
	now, most atomic.Int32
}

func (s *slowStore) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(50 * time.Millisecond)
	return s.Memory.Claim(ctx, key, fp, lease)
}

// A burst of duplicates costs a shared store one claim of the key at a
// time from a process, and each still gets the first request's answer.
func TestKeeperClaimsOneKeyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowStore{Memory: newMemory(t, idempotency.MemoryConfig{})}
		var runs atomic.Int32
		h := newHandler(t, idempotency.Config{Store: store, Wait: 10 * time.Second}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			time.Sleep(time.Second)
			w.WriteHeader(http.StatusCreated)
		}))
		codes := make(chan int, 200)
		for range 200 {
			go func() {
				codes <- do(h, http.MethodPost, "/", "k", "x").Code
			}()
		}
		for range 200 {
			if c := <-codes; c != http.StatusCreated {
				t.Errorf("answer %d, want 201 (the original or its replay)", c)
			}
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
		if n := store.most.Load(); n != 1 {
			t.Errorf("%d claims of one key at once reached the store, want 1", n)
		}
	})
}

// failingReleases is a shared store whose releases fail while fail is
// set.
type failingReleases struct {
	*idempotency.Memory
	fail atomic.Bool
}

func (s *failingReleases) Release(ctx context.Context, key string, token uint64) error {
	if s.fail.Load() {
		return errors.New("store unreachable")
	}
	return s.Memory.Release(ctx, key, token)
}

// A handler that fails (5xx) while the store cannot be reached has its
// key released once the store is back, within a second, not when its
// lease expires: the client's retry then runs.
func TestFailedReleaseRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &failingReleases{Memory: newMemory(t, idempotency.MemoryConfig{})}
		var runs atomic.Int32
		h := newHandler(t, idempotency.Config{Store: store, StoreTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		send := func() int { return do(h, http.MethodPost, "/", "k", "x").Code }
		store.fail.Store(true)
		if code := send(); code != http.StatusServiceUnavailable {
			t.Fatalf("the failing handler: %d, want 503", code)
		}
		time.Sleep(5 * time.Second) // the store's outage
		store.fail.Store(false)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if code := send(); code != http.StatusCreated || runs.Load() != 2 {
			t.Errorf("the retry 1.5s after the store came back: %d after %d runs, want 201 from its own run (not 409 for the lease)", code, runs.Load())
		}
	})
}

// Drain waits for the store calls run after a request was answered: the
// second release of a claim whose answer was lost, a store timeout
// later. Once it returns, the key is free; a context that ends first
// makes it return that context's cause.
func TestDrainWaitsForBackgroundReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &overtaken{Store: newMemory(t, idempotency.MemoryConfig{})}
		m := configtest.Must(idempotency.New(idempotency.Config{Store: store, StoreTimeout: 100 * time.Millisecond, Lease: 30 * time.Second}))(t)
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
		store.lose.Store(true)
		if code := do(h, http.MethodPost, "/", "k", "x").Code; code != http.StatusServiceUnavailable {
			t.Fatalf("a claim whose connection broke: %d, want 503", code)
		}
		store.lose.Store(false)
		cause := errors.New("shutdown deadline")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		running := runtime.NumGoroutine()
		if err := m.Drain(ctx); !errors.Is(err, cause) {
			t.Errorf("Drain with an ended context while a release is pending: %v, want its cause", err)
		}
		synctest.Wait()
		if n := runtime.NumGoroutine(); n > running {
			t.Errorf("%d goroutines after a Drain that gave up, %d before: it left a waiter behind", n, running)
		}
		start := time.Now()
		if err := m.Drain(context.Background()); err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if waited := time.Since(start); waited < 100*time.Millisecond {
			t.Errorf("Drain returned after %v, before the second release (a store timeout, 100ms)", waited)
		}
		if n := store.releases.Load(); n != 2 {
			t.Errorf("%d releases of the claim, want 2: one at once, one when it can no longer land", n)
		}
		if code := do(h, http.MethodPost, "/", "k", "x").Code; code != http.StatusCreated {
			t.Errorf("after Drain: %d, want 201 (the claim released)", code)
		}
	})
}
