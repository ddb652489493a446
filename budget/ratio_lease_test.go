package budget

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/internal/rolling"
)

// TestRatioLeaseChangesNoDecision drives a Ratio and a bare window side
// by side with random operations at random instants, some of them going
// back in time: the window is driven by Withdraw's documented rule alone
// (fold Record's counts in only when the counts already folded refuse),
// with no lease. Withdrawals come from random stripes, as from goroutines
// on different cores, each with its own lease: mostly from a few of them,
// so that several leases are out at once. Every withdrawal must get the
// plainWithdraw is the plain window's decision on a withdrawal at tw, the
// reference the leases are compared with: r's rule on w's sums, folded
// only when they refuse, and the retry counted when it is allowed.
func plainWithdraw(r *Ratio, w *rolling.Window, tw int64) bool {
	want := r.allows(w.Sums(tw))
	if !want {
		w.Fold(tw)
		want = r.allows(w.Sums(tw))
	}
	if want {
		w.AddAt(tw, 0, 1)
	}
	return want
}

// same answer and every Counts the same counts.
func TestRatioLeaseChangesNoDecision(t *testing.T) {
	for seed := range 30 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 17))
		cfg := RatioConfig{
			Ratio:   []float64{0.1, 0.5, 2}[seed%3],
			NoFloor: seed%2 == 0,
			Window:  time.Second,
			Now:     at(t0),
		}
		r := configtest.Must(NewRatio(cfg))(t)
		w := rolling.New(time.Second, ratioSlots)
		w.Reset(0)
		now := int64(0) // ns since t0
		for i := range 5000 {
			at := t0.Add(time.Duration(now))
			tw := max(now, 0)
			switch op := rnd.IntN(16); {
			case op == 0:
				now += rnd.Int64N(int64(300 * time.Millisecond))
			case op == 1:
				now -= rnd.Int64N(int64(20 * time.Millisecond))
			case op == 2:
				now += rnd.Int64N(int64(time.Millisecond))
			case op < 5:
				r.RecordAt(at, Attempt{N: 1})
				w.AddAt(tw, 1, 0)
			case op < 8:
				for range rnd.IntN(20) {
					r.Record(Attempt{N: 1})
					w.Add(1, 0)
				}
			case op == 8:
				w.Fold(tw)
				wantReq, wantRet := w.Sums(tw)
				if req, ret := r.Counts(at); req != wantReq || ret != wantRet {
					t.Fatalf("seed %d, op %d at %v: Counts = %d, %d; the window gives %d, %d", seed, i, time.Duration(now), req, ret, wantReq, wantRet)
				}
			default:
				want := plainWithdraw(r, w, tw)
				var got bool
				switch k := rnd.IntN(8); {
				case k == 0:
					got = r.WithdrawAt(at, failure.Transient)
				case k == 1:
					got = r.withdrawFrom(r.since(at), rnd.IntN(rolling.Stripes), rnd.Uint64N(4))
				default:
					// Stacks taking turns at a lease make it change the
					// stripes; that must change no decision either.
					got = r.withdrawFrom(r.since(at), k%3, rnd.Uint64N(4))
				}
				if got != want {
					t.Fatalf("seed %d, op %d at %v: withdrawal = %v; the window gives %v", seed, i, time.Duration(now), got, want)
				}
			}
		}
	}
}

// TestRatioHeadroom checks that a lease holds exactly the retries that
// allows grants one after another.
func TestRatioHeadroom(t *testing.T) {
	tests := []struct {
		name              string
		cfg               RatioConfig
		requests, retries int64
		want              uint32
	}{
		{"no requests, no floor", RatioConfig{NoFloor: true}, 0, 0, 0},
		{"10% of 95", RatioConfig{NoFloor: true}, 95, 0, 9},
		{"10% of 95, 9 taken", RatioConfig{NoFloor: true}, 95, 9, 0},
		{"floor of 100 and 10% of 1000, 150 taken", RatioConfig{}, 1000, 150, 50},
		{"overspent", RatioConfig{NoFloor: true}, 10, 5, 0},
		{"fractional floor", RatioConfig{MinPerSecond: 0.25, Window: 4 * time.Second, Ratio: 0.5}, 3, 0, 2},
		{"at most one lease's worth", RatioConfig{Ratio: 1e6, NoFloor: true}, 1 << 40, 0, maxLease},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := configtest.Must(NewRatio(tc.cfg))(t)
			got := r.headroom(tc.requests, tc.retries)
			if got != tc.want {
				t.Fatalf("headroom = %d, want %d", got, tc.want)
			}
			// Each leased retry is one that allows grants.
			for i := range min(int64(got), 1000) {
				if !r.allows(tc.requests, tc.retries+i) {
					t.Fatalf("retry %d of %d leased is refused by allows", i+1, got)
				}
			}
			if got < 1000 && r.allows(tc.requests, tc.retries+int64(got)) {
				t.Fatalf("allows grants one retry more than the %d leased", got)
			}
		})
	}
}

// TestRatioRealClock runs a Ratio on the real clock (RatioConfig.Now nil)
// in virtual time: the floor's reserve is spent, stays spent while its
// slot is in the window, comes back when it slides out, and requests
// counted by Record make room when a withdrawal folds them in.
func TestRatioRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := configtest.Must(NewRatio(RatioConfig{}))(t)
		take := func() (n int) {
			for r.Withdraw(failure.Transient) {
				n++
			}
			return n
		}
		steps := []struct {
			sleep    time.Duration
			requests int
			want     int
		}{
			{0, 0, 100},                  // the floor: 10 a second over 10 s
			{9 * time.Second, 0, 0},      // the slot of those 100 is still in the window
			{time.Second, 0, 100},        // at 10 s it has slid out
			{5 * time.Second, 1000, 100}, // 10% of 1000 requests recorded since
		}
		for i, s := range steps {
			for range s.requests {
				r.Record(Attempt{N: 1})
			}
			time.Sleep(s.sleep)
			if n := take(); n != s.want {
				t.Fatalf("step %d: %d retries granted, want %d", i, n, s.want)
			}
		}
	})
}

// TestRatioUnshare checks when a Ratio gives goroutines other stripes:
// when goroutines take turns at one lease, at most once a millisecond,
// and never for a goroutine alone on its stripe.
func TestRatioUnshare(t *testing.T) {
	// mapping is the stripes of a few stack blocks: it changes with the
	// salt (for these blocks, at every change).
	mapping := func(r *Ratio) (m [8]int) {
		for b := range m {
			m[b] = r.w.StripeOf(uint64(b))
		}
		return m
	}
	tests := []struct {
		name    string
		blocks  []uint64 // the stack blocks taking turns at stripe 0's lease
		at      []time.Duration
		changes int
	}{
		{"a goroutine alone", []uint64{7}, []time.Duration{0, 0, 0}, 0},
		{"two goroutines taking turns", []uint64{7, 9}, []time.Duration{0}, 1},
		{"at most once a millisecond", []uint64{7, 9}, []time.Duration{0, time.Millisecond / 2, time.Millisecond}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := configtest.Must(NewRatio(RatioConfig{NoFloor: true, Now: at(t0)}))(t)
			for range 1000 {
				r.RecordAt(t0, Attempt{N: 1})
			}
			changes, before := 0, mapping(r)
			for _, d := range tc.at {
				// 100 retries in the window: the first withdrawal leases
				// the other 99 to stripe 0, the rest take them in turns,
				// and the last one, finding the lease spent, is refused.
				for i := range 101 {
					r.withdrawFrom(int64(d), 0, tc.blocks[i%len(tc.blocks)])
				}
				if m := mapping(r); m != before {
					changes, before = changes+1, m
				}
				// Retire the lease and take the round's retries out of
				// the window, so that the next round has room again.
				r.Counts(t0.Add(d))
				r.w.AddAt(int64(d), 0, -100)
			}
			if changes != tc.changes {
				t.Fatalf("the stripes changed %d times, want %d", changes, tc.changes)
			}
		})
	}
}

// TestRatioLeasesAcrossSlots is TestRatioLeaseChangesNoDecision with the
// clock going back and forth across one slot boundary, where the later
// window has lost the first slot's requests but sees the earlier slot's
// retries, while leases of several stripes are out.
func TestRatioLeasesAcrossSlots(t *testing.T) {
	for seed := range 200 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 23))
		r := configtest.Must(NewRatio(RatioConfig{Ratio: 1, NoFloor: true, Window: time.Second, Now: at(t0)}))(t)
		w := rolling.New(time.Second, ratioSlots)
		w.Reset(0)
		for _, rec := range []struct {
			at time.Duration
			n  int
		}{{0, 20 + rnd.IntN(100)}, {500 * time.Millisecond, 20 + rnd.IntN(100)}} {
			for range rec.n {
				r.RecordAt(t0.Add(rec.at), Attempt{N: 1})
				w.AddAt(int64(rec.at), 1, 0)
			}
		}
		for i := range 400 {
			// The last slot of the first window, or the first of the next.
			tw := int64(990*time.Millisecond) + int64(rnd.IntN(2))*int64(10*time.Millisecond)
			want := plainWithdraw(r, w, tw)
			s := rnd.IntN(4)
			if got := r.withdrawFrom(tw, s, uint64(s)); got != want {
				t.Fatalf("seed %d, withdrawal %d at %v from stripe %d = %v; the window gives %v", seed, i, time.Duration(tw), s, got, want)
			}
		}
	}
}
