package hedge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/unherd/unherd/budget"
)

// An interleaving of a call with a primary and up to two hedges (one
// delay D apart, at D and 2D): for each attempt, how it ends (success,
// failure, or hanging until its context ends) and, if it ends, when,
// relative to the starts of the others and to the other attempts' ends.
type ending int

const (
	hangs ending = iota
	succeeds
	fails
)

type interleaving struct {
	end [3]ending
	at  [3]time.Duration // end time since the call started, if it ends
}

func (iv interleaving) String() string {
	var b strings.Builder
	for i, e := range iv.end {
		if i > 0 {
			b.WriteString(", ")
		}
		switch e {
		case hangs:
			fmt.Fprintf(&b, "%d hangs", i)
		case succeeds:
			fmt.Fprintf(&b, "%d succeeds at %v", i, iv.at[i])
		case fails:
			fmt.Fprintf(&b, "%d fails at %v", i, iv.at[i])
		}
	}
	return b.String()
}

// interleavings returns every order of the three attempts' ends among
// themselves and among the hedges' starts: an attempt that ends does so
// in a gap between starts at or after its own start ([0, D), [D, 2D) or
// [2D, 3D)), and the ends sharing a gap come in every order. The times
// are spread evenly inside each gap, so no two events share an instant.
func interleavings(d time.Duration) []interleaving {
	var out []interleaving
	var gaps [3]int
	var rec func(i int, iv interleaving)
	rec = func(i int, iv interleaving) {
		if i == 3 {
			// Every order of the ends within each gap.
			var byGap [3][]int
			for a := range 3 {
				if iv.end[a] != hangs {
					byGap[gaps[a]] = append(byGap[gaps[a]], a)
				}
			}
			var place func(g int, iv interleaving)
			place = func(g int, iv interleaving) {
				if g == 3 {
					out = append(out, iv)
					return
				}
				for _, perm := range permutations(byGap[g]) {
					for k, a := range perm {
						iv.at[a] = time.Duration(g)*d + time.Duration(k+1)*d/time.Duration(len(perm)+1)
					}
					place(g+1, iv)
				}
			}
			place(0, iv)
			return
		}
		iv.end[i] = hangs
		rec(i+1, iv)
		for _, e := range []ending{succeeds, fails} {
			for g := i; g < 3; g++ {
				iv.end[i], gaps[i] = e, g
				rec(i+1, iv)
			}
		}
	}
	rec(0, interleaving{})
	return out
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i, x := range xs {
		rest := slices.Concat(xs[:i:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]int{x}, p...))
		}
	}
	return out
}

// expected is what a hedged call with MaxHedges 2, a fixed delay d and an
// unlimited budget must do in iv: the reference model, event by event.
// firstSuccess selects DoFirstSuccess's rule (a failure settles the call
// only when no other attempt is running) over Do's (every error is fatal).
// A call that nothing settles ends at the caller's deadline.
type expectation struct {
	Value   int
	Err     string
	At      time.Duration
	Started []time.Duration
}

func expected(iv interleaving, d, deadline time.Duration, firstSuccess bool) expectation {
	type ev struct {
		at      time.Duration
		attempt int
		start   bool
	}
	var evs []ev
	for i := 1; i < 3; i++ {
		evs = append(evs, ev{at: time.Duration(i) * d, attempt: i, start: true})
	}
	for i, e := range iv.end {
		if e != hangs {
			evs = append(evs, ev{at: iv.at[i], attempt: i})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return int(a.at - b.at) })
	started := []time.Duration{0}
	running := map[int]bool{0: true}
	for _, e := range evs {
		switch {
		case e.start:
			if e.attempt == len(started) { // the previous one started
				started = append(started, e.at)
				running[e.attempt] = true
			}
		case !running[e.attempt]: // never started
		case iv.end[e.attempt] == succeeds:
			return expectation{Value: 100 + e.attempt, At: e.at, Started: started}
		default:
			delete(running, e.attempt)
			if firstSuccess && len(running) > 0 {
				continue
			}
			return expectation{Err: fmt.Sprintf("attempt %d failed", e.attempt), At: e.at, Started: started}
		}
	}
	return expectation{Err: context.DeadlineExceeded.Error(), At: deadline, Started: started}
}

// TestEveryInterleaving runs Do and DoFirstSuccess with two hedges
// through every interleaving of three attempts' ends and the hedges'
// starts, and checks each against the reference model: the value or
// error returned, when, and which attempts started when. It covers a
// primary that fails while the first hedge runs: the second hedge must
// still start on time (its timer once stopped with the primary, and the
// call then waited on a hung hedge).
func TestEveryInterleaving(t *testing.T) {
	const d = 10 * ms
	const deadline = 100 * ms
	ivs := interleavings(d)
	for _, firstSuccess := range []bool{false, true} {
		name := "Do"
		do := Do[int]
		if firstSuccess {
			name, do = "DoFirstSuccess", DoFirstSuccess[int]
		}
		t.Run(name, func(t *testing.T) {
			for _, iv := range ivs {
				want := expected(iv, d, deadline, firstSuccess)
				t.Run(iv.String(), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						h := mustNew(t, Config{Delay: d, MaxHedges: 2, Budget: budget.Unlimited, MinWinShare: -1})
						ctx, cancel := context.WithTimeout(context.Background(), deadline)
						defer cancel()
						t0 := time.Now()
						var mu sync.Mutex
						var started [3]time.Duration
						n := 0
						fn := func(ctx context.Context, attempt int) (int, error) {
							mu.Lock()
							started[attempt] = time.Since(t0)
							n = max(n, attempt+1)
							mu.Unlock()
							if iv.end[attempt] == hangs {
								<-ctx.Done()
								return 0, ctx.Err()
							}
							timer := time.NewTimer(iv.at[attempt] - time.Duration(attempt)*d)
							defer timer.Stop()
							select {
							case <-timer.C:
							case <-ctx.Done():
								return 0, ctx.Err()
							}
							if iv.end[attempt] == succeeds {
								return 100 + attempt, nil
							}
							return 0, fmt.Errorf("attempt %d failed", attempt)
						}
						v, err := do(ctx, h, fn, func(int) { t.Errorf("%v: cleanup called; no success can be late", iv) })
						got := expectation{Value: v, At: time.Since(t0)}
						if err != nil {
							got.Err = err.Error()
						}
						drain()
						mu.Lock()
						got.Started = started[:n]
						mu.Unlock()
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("%v: (-want +got)\n%s", iv, diff)
						}
						if err != nil && want.Err == context.DeadlineExceeded.Error() && !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("%v: error %v does not match context.DeadlineExceeded", iv, err)
						}
					})
				})
			}
		})
	}
	if len(ivs) != 193 { // 7 endings of the primary, 5 of hedge 1, 3 of hedge 2, times the orders within a gap
		t.Errorf("only %d interleavings", len(ivs))
	}
}
