// Package storetest is the conformance suite of idempotency.Store: every
// store, the in-memory one and those of unherd's Redis and PostgreSQL
// modules, runs it from its tests, and so can a store of your own:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, storetest.Options{
//			New: func(t *testing.T) idempotency.Store { return newMyStore(t) },
//		})
//	}
//
// It checks claims, leases, fencing tokens, completion, release, expiry
// and that of concurrent claims of one key exactly one wins.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// Options configures Run.
type Options struct {
	// New returns the store under test. It may return the same store
	// every time: each case uses keys of its own.
	New func(t *testing.T) idempotency.Store

	// Lease is the short lease the expiry cases use; they wait about
	// four times its length. Zero means 100 ms. A store whose clock is a
	// server's must be given a lease well above the clocks' skew and
	// the round-trip time.
	Lease time.Duration

	// Bubble, if set, runs each case; give synctest.Test for a store on
	// the process's own clock, so that the waits take no real time. Nil
	// runs the cases directly, waiting in real time.
	Bubble func(t *testing.T, f func(t *testing.T))

	// Concurrency is how many goroutines race to claim one key. Zero
	// means 64.
	Concurrency int
}

// Run runs the conformance cases as subtests of t.
func Run(t *testing.T, o Options) {
	if o.Lease == 0 {
		o.Lease = 100 * time.Millisecond
	}
	if o.Concurrency == 0 {
		o.Concurrency = 64
	}
	if o.Bubble == nil {
		o.Bubble = func(t *testing.T, f func(*testing.T)) { f(t) }
	}
	prefix := "storetest-" + random() + "-"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o.Bubble(t, func(t *testing.T) {
				s := &suite{t: t, store: o.New(t), o: o, key: prefix + c.name}
				c.f(s)
			})
		})
	}
}

func random() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type suite struct {
	t     *testing.T
	store idempotency.Store
	o     Options
	key   string
}

var (
	fpA = idempotency.Fingerprint{1, 2, 3}
	fpB = idempotency.Fingerprint{4, 5, 6}
)

const long = time.Hour

func (s *suite) ctx() context.Context { return context.Background() }

func (s *suite) claim(key string, fp idempotency.Fingerprint, lease time.Duration) idempotency.Claim {
	s.t.Helper()
	c, err := s.store.Claim(s.ctx(), key, fp, lease)
	if err != nil {
		s.t.Fatalf("Claim(%q): %v", key, err)
	}
	return c
}

func (s *suite) acquire(key string, lease time.Duration) uint64 {
	s.t.Helper()
	c := s.claim(key, fpA, lease)
	if c.State != idempotency.Acquired {
		s.t.Fatalf("Claim of a new key: state %v, want acquired", c.State)
	}
	return c.Token
}

func (s *suite) wantState(key string, want idempotency.State) idempotency.Claim {
	s.t.Helper()
	c := s.claim(key, fpB, long)
	if c.State != want {
		s.t.Fatalf("Claim: state %v, want %v", c.State, want)
	}
	return c
}

func (s *suite) wantLost(what string, err error) {
	s.t.Helper()
	if !errors.Is(err, idempotency.ErrLeaseLost) {
		s.t.Errorf("%s: error %v, want ErrLeaseLost", what, err)
	}
}

func sampleResponse() *idempotency.Response {
	return &idempotency.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
		Body:   []byte(`{"id":"ch_1"}`),
	}
}

func sameResponse(a, b *idempotency.Response) bool {
	if a.Status != b.Status || !bytes.Equal(a.Body, b.Body) || a.Omitted != b.Omitted || len(a.Header) != len(b.Header) {
		return false
	}
	for k, vs := range a.Header {
		if !slices.Equal(vs, b.Header[k]) {
			return false
		}
	}
	return true
}

var cases = []struct {
	name string
	f    func(s *suite)
}{
	{"ClaimNewKey", func(s *suite) {
		if tok := s.acquire(s.key, long); tok == 0 {
			s.t.Error("token 0; tokens must be non-zero")
		}
	}},
	{"ClaimInFlight", func(s *suite) {
		s.acquire(s.key, long)
		c := s.wantState(s.key, idempotency.InFlight)
		if c.Fingerprint != fpA {
			s.t.Errorf("fingerprint %x, want the first claim's %x", c.Fingerprint[:4], fpA[:4])
		}
	}},
	{"KeysAreIndependent", func(s *suite) {
		s.acquire(s.key+"-1", long)
		s.acquire(s.key+"-2", long)
	}},
	{"CompleteReplays", func(s *suite) {
		tok := s.acquire(s.key, long)
		want := sampleResponse()
		if err := s.store.Complete(s.ctx(), s.key, tok, want, long); err != nil {
			s.t.Fatal(err)
		}
		c := s.wantState(s.key, idempotency.Completed)
		if c.Fingerprint != fpA {
			s.t.Errorf("fingerprint %x, want %x", c.Fingerprint[:4], fpA[:4])
		}
		if !sameResponse(c.Response, want) {
			s.t.Errorf("response %+v, want %+v", c.Response, want)
		}
		if err := s.store.Complete(s.ctx(), s.key, tok, want, long); err != nil {
			s.t.Errorf("second Complete with the same token: %v", err)
		}
	}},
	{"CompleteLargeAndEmpty", func(s *suite) {
		big := &idempotency.Response{Status: 200, Body: bytes.Repeat([]byte("x"), 256<<10)}
		empty := &idempotency.Response{Status: 204}
		omitted := &idempotency.Response{Status: 200, Header: http.Header{"A": {"b"}}, Omitted: true}
		for i, want := range []*idempotency.Response{big, empty, omitted} {
			key := s.key + "-" + string(rune('a'+i))
			tok := s.acquire(key, long)
			if err := s.store.Complete(s.ctx(), key, tok, want, long); err != nil {
				s.t.Fatal(err)
			}
			if c := s.wantState(key, idempotency.Completed); c.Response.Status != want.Status || len(c.Response.Body) != len(want.Body) || c.Response.Omitted != want.Omitted {
				s.t.Errorf("response %d: status %d, %d bytes, omitted %v; want %d, %d, %v", i, c.Response.Status, len(c.Response.Body), c.Response.Omitted, want.Status, len(want.Body), want.Omitted)
			}
		}
	}},
	{"ReleaseFreesKey", func(s *suite) {
		tok := s.acquire(s.key, long)
		if err := s.store.Release(s.ctx(), s.key, tok); err != nil {
			s.t.Fatal(err)
		}
		tok2 := s.acquire(s.key, long)
		if tok2 == tok {
			s.t.Errorf("a new claim drew the released claim's token %d", tok)
		}
		s.wantLost("Release with the released token", s.store.Release(s.ctx(), s.key, tok))
		s.wantLost("Complete with the released token", s.store.Complete(s.ctx(), s.key, tok, sampleResponse(), long))
		s.wantState(s.key, idempotency.InFlight)
	}},
	{"WrongTokenIsFenced", func(s *suite) {
		tok := s.acquire(s.key, long)
		bad := tok + 1
		s.wantLost("Renew", s.store.Renew(s.ctx(), s.key, bad, long))
		s.wantLost("Complete", s.store.Complete(s.ctx(), s.key, bad, sampleResponse(), long))
		s.wantLost("Release", s.store.Release(s.ctx(), s.key, bad))
		s.wantLost("Renew of an absent key", s.store.Renew(s.ctx(), s.key+"-absent", tok, long))
		s.wantState(s.key, idempotency.InFlight)
	}},
	{"CompletedIsFinal", func(s *suite) {
		tok := s.acquire(s.key, long)
		if err := s.store.Complete(s.ctx(), s.key, tok, sampleResponse(), long); err != nil {
			s.t.Fatal(err)
		}
		s.wantLost("Release after Complete", s.store.Release(s.ctx(), s.key, tok))
		s.wantLost("Renew after Complete", s.store.Renew(s.ctx(), s.key, tok, long))
		s.wantState(s.key, idempotency.Completed)
	}},
	{"ExpiredLeaseIsTakenOver", func(s *suite) {
		old := s.acquire(s.key, s.o.Lease)
		time.Sleep(2 * s.o.Lease)
		c := s.claim(s.key, fpB, long)
		if c.State != idempotency.Acquired {
			s.t.Fatalf("Claim after the lease expired: state %v, want acquired", c.State)
		}
		if c.Token == old {
			s.t.Fatalf("the takeover drew the expired claim's token %d", old)
		}
		s.wantLost("Complete by the expired owner", s.store.Complete(s.ctx(), s.key, old, sampleResponse(), long))
		s.wantLost("Renew by the expired owner", s.store.Renew(s.ctx(), s.key, old, long))
		s.wantLost("Release by the expired owner", s.store.Release(s.ctx(), s.key, old))
		if got := s.wantState(s.key, idempotency.InFlight); got.Fingerprint != fpB {
			s.t.Errorf("fingerprint %x, want the new owner's %x", got.Fingerprint[:4], fpB[:4])
		}
	}},
	{"ExpiredLeaseCannotComplete", func(s *suite) {
		tok := s.acquire(s.key, s.o.Lease)
		time.Sleep(2 * s.o.Lease)
		s.wantLost("Complete after the lease expired", s.store.Complete(s.ctx(), s.key, tok, sampleResponse(), long))
		s.acquire(s.key, long)
	}},
	{"RenewExtendsLease", func(s *suite) {
		tok := s.acquire(s.key, 2*s.o.Lease)
		for range 3 {
			time.Sleep(s.o.Lease)
			if err := s.store.Renew(s.ctx(), s.key, tok, 2*s.o.Lease); err != nil {
				s.t.Fatalf("Renew: %v", err)
			}
		}
		// 3 leases in, past the first lease's end, the renewed one holds.
		s.wantState(s.key, idempotency.InFlight)
	}},
	{"CompletedRecordExpires", func(s *suite) {
		tok := s.acquire(s.key, long)
		if err := s.store.Complete(s.ctx(), s.key, tok, sampleResponse(), 2*s.o.Lease); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(s.o.Lease)
		s.wantState(s.key, idempotency.Completed)
		time.Sleep(2 * s.o.Lease)
		s.acquire(s.key, long)
	}},
	{"ConcurrentClaimsOneWinner", func(s *suite) {
		n := s.o.Concurrency
		var wg sync.WaitGroup
		states := make([]idempotency.State, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				c, err := s.store.Claim(s.ctx(), s.key, fpA, long)
				states[i], errs[i] = c.State, err
			})
		}
		wg.Wait()
		won := 0
		for i := range n {
			if errs[i] != nil {
				s.t.Fatalf("claim %d: %v", i, errs[i])
			}
			if states[i] == idempotency.Acquired {
				won++
			} else if states[i] != idempotency.InFlight {
				s.t.Errorf("claim %d: state %v", i, states[i])
			}
		}
		if won != 1 {
			s.t.Errorf("%d of %d concurrent claims acquired the key, want exactly 1", won, n)
		}
	}},
}
