package budget

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/swarm"
)

// hammer runs ops random calls on b from each of g goroutines, while a
// watcher checks that tokens() stays within [0, max] at every sample; it
// checks the bound once more at the end.
func hammer(t *testing.T, b Budget, tokens func() float64, limit float64) {
	t.Helper()
	const g, ops = 16, 20000
	var (
		done atomic.Bool
		bad  atomic.Value // first out-of-range sample, as float64
	)
	check := func() {
		if v := tokens(); v < 0 || v > limit {
			bad.CompareAndSwap(nil, v)
		}
	}
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		for !done.Load() {
			check()
		}
	}()
	swarm.Seeded(t, g, 7, func(r *rand.Rand) {
		for range ops {
			if op := randomOp(r); op.withdraw {
				b.Withdraw(op.c)
			} else {
				b.Record(op.a)
			}
		}
	})
	done.Store(true)
	await.Recv(t, watcher, "the watcher of the token count to stop")
	check()
	if v := bad.Load(); v != nil {
		t.Fatalf("tokens reached %v, outside [0, %v]", v, limit)
	}
}

func TestTokenBucketBoundsConcurrent(t *testing.T) {
	// A small bucket, so that the random traffic hits both bounds often.
	b := configtest.Must(NewTokenBucket(TokenBucketConfig{Capacity: 30, TimeoutCost: 7}))(t)
	hammer(t, b, func() float64 { return float64(b.Tokens()) }, 30)
}

func TestGRPCBoundsConcurrent(t *testing.T) {
	g := configtest.Must(NewGRPC(GRPCConfig{MaxTokens: 4, TokenRatio: 0.7}))(t)
	hammer(t, g, g.Tokens, 4)
}

// TestTokenBucketConservedConcurrent checks that concurrent updates lose
// nothing: with a bucket too large to fill, the tokens left are exactly
// the capacity minus what the granted withdrawals took plus what the
// successes put back.
func TestTokenBucketConservedConcurrent(t *testing.T) {
	const g, ops = 8, 10000
	b := configtest.Must(NewTokenBucket(TokenBucketConfig{Capacity: 1 << 40}))(t)
	b.tokens.Store(1000) // low enough that some withdrawals are refused; the capacity is never reached
	var net atomic.Int64
	swarm.Seeded(t, g, 9, func(r *rand.Rand) {
		for range ops {
			op := randomOp(r)
			switch {
			case op.withdraw:
				if b.Withdraw(op.c) {
					net.Add(-b.cost[op.c])
				}
			case !op.a.Failed && op.a.N == 1:
				b.Record(op.a)
				net.Add(b.incr)
			case !op.a.Failed:
				b.Record(op.a)
				net.Add(b.cost[op.a.Charged])
			default:
				b.Record(op.a)
			}
		}
	})
	if got, want := b.Tokens(), 1000+net.Load(); got != want {
		t.Fatalf("tokens = %d, want %d", got, want)
	}
}

// TestRatioNeverOverspendsConcurrent checks the ratio's bound under
// contention: at one instant, whatever the interleaving of requests and
// withdrawals, the withdrawals granted never exceed Ratio times the
// requests recorded plus the floor.
func TestRatioNeverOverspendsConcurrent(t *testing.T) {
	for _, cfg := range []RatioConfig{
		{Ratio: 0.1, NoFloor: true},
		{Ratio: 0.05, MinPerSecond: 1, Window: time.Second},
	} {
		cfg.Now = at(t0)
		r := configtest.Must(NewRatio(cfg))(t)
		const g, ops = 16, 5000
		var granted, requests atomic.Int64
		now := t0.Add(3 * time.Second)
		swarm.Seeded(t, g, 11, func(rnd *rand.Rand) {
			for range ops {
				if rnd.IntN(4) == 0 {
					if r.WithdrawAt(now, failure.Transient) {
						granted.Add(1)
					}
				} else {
					r.RecordAt(now, Attempt{N: 1})
					requests.Add(1)
				}
			}
		})
		reserve := cfg.MinPerSecond * cfg.Window.Seconds()
		limit := int64(cfg.Ratio*float64(requests.Load()) + reserve)
		req, ret := r.Counts(now)
		if granted.Load() > limit || ret != granted.Load() || req != requests.Load() {
			t.Fatalf("%+v: granted %d (counted %d) for %d requests (counted %d); limit %d",
				cfg, granted.Load(), ret, requests.Load(), req, limit)
		}
		// Nearly the whole budget should have been usable: racing
		// withdrawals may refuse a few too many, never too few.
		if granted.Load() < limit-g {
			t.Fatalf("%+v: only %d of %d retries granted", cfg, granted.Load(), limit)
		}
	}
}

// TestRatioMovingClockConcurrent runs requests and withdrawals while the
// clock moves across many slots, for the race detector, and checks that
// counts never go negative.
func TestRatioMovingClockConcurrent(t *testing.T) {
	var clock atomic.Int64
	r := configtest.Must(NewRatio(RatioConfig{Window: time.Second, Now: func() time.Time { return t0.Add(time.Duration(clock.Load())) }}))(t)
	swarm.Seeded(t, 8, 13, func(rnd *rand.Rand) {
		for range 5000 {
			switch rnd.IntN(8) {
			case 0:
				clock.Add(int64(rnd.IntN(int(100 * time.Millisecond))))
			case 1:
				r.Withdraw(failure.Class(rnd.IntN(4)))
			default:
				r.Record(Attempt{N: 1 + rnd.IntN(2)})
			}
			if req, ret := r.Counts(t0.Add(time.Duration(clock.Load()))); req < 0 || ret < 0 {
				t.Errorf("negative counts: %d requests, %d retries", req, ret)
				return
			}
		}
	})
}
