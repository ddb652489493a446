package budget

import (
	"testing"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/internal/configtest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns a clock stopped at t0, so that a Ratio's origin is t0.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// ratioOp is one call on a Ratio at an explicit offset from t0: n first
// attempts recorded, or one withdrawal and its expected answer.
type ratioOp struct {
	at       time.Duration
	requests int
	withdraw int   // withdrawals to make
	ok       int   // how many of them must succeed
	wantReq  int64 // Counts at the same instant, after the op
	wantRet  int64
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name string
		cfg  RatioConfig
		ops  []ratioOp
	}{
		{"10% of requests, no floor", RatioConfig{NoFloor: true}, []ratioOp{
			{at: 0, withdraw: 1, ok: 0},        // no requests, no retries
			{at: 0, requests: 10, wantReq: 10}, // 10 requests: 1 retry
			{at: time.Second, withdraw: 3, ok: 1, wantReq: 10, wantRet: 1},
			{at: 2 * time.Second, requests: 9, wantReq: 19, wantRet: 1}, // 1.9: still 1
			{at: 2 * time.Second, withdraw: 1, ok: 0, wantReq: 19, wantRet: 1},
			{at: 2 * time.Second, requests: 1, withdraw: 1, ok: 1, wantReq: 20, wantRet: 2},
		}},
		{"floor of 10 per second over 10 s", RatioConfig{}, []ratioOp{
			{at: 0, withdraw: 150, ok: 100, wantRet: 100}, // 10/s * 10 s
			{at: time.Second, requests: 100, withdraw: 20, ok: 10, wantReq: 100, wantRet: 110},
		}},
		{"window slides in 500 ms steps", RatioConfig{NoFloor: true}, []ratioOp{
			{at: 0, requests: 20, withdraw: 2, ok: 2, wantReq: 20, wantRet: 2},
			{at: 5 * time.Second, requests: 10, withdraw: 2, ok: 1, wantReq: 30, wantRet: 3},
			// 9.999 s: the first slot [0, 0.5 s) is still in the window.
			{at: 9999 * time.Millisecond, withdraw: 1, ok: 0, wantReq: 30, wantRet: 3},
			// 10 s: it has slid out; 10 requests and 1 retry remain.
			{at: 10 * time.Second, wantReq: 10, wantRet: 1},
			{at: 10 * time.Second, requests: 10, withdraw: 2, ok: 1, wantReq: 20, wantRet: 2},
			// 15.5 s: everything from 5 s has slid out too.
			{at: 15500 * time.Millisecond, wantReq: 10, wantRet: 1},
			// long idle: nothing left, slots reused from scratch
			{at: time.Hour, wantReq: 0, wantRet: 0},
			{at: time.Hour, requests: 30, withdraw: 4, ok: 3, wantReq: 30, wantRet: 3},
		}},
		{"ratio above one, short window", RatioConfig{Ratio: 2, NoFloor: true, Window: time.Second}, []ratioOp{
			{at: 0, requests: 3, withdraw: 7, ok: 6, wantReq: 3, wantRet: 6},
			{at: 999 * time.Millisecond, withdraw: 1, ok: 0, wantReq: 3, wantRet: 6},
			{at: time.Second, withdraw: 1, ok: 0}, // slot 0 gone: nothing left
		}},
		{"fractional floor", RatioConfig{MinPerSecond: 0.25, Window: 4 * time.Second, Ratio: 0.5}, []ratioOp{
			{at: 0, withdraw: 2, ok: 1, wantRet: 1},                                    // 0.25/s * 4 s = 1
			{at: time.Second, requests: 3, withdraw: 3, ok: 1, wantReq: 3, wantRet: 2}, // 1 + 1.5
		}},
		{"clock before the origin counts as the origin", RatioConfig{NoFloor: true}, []ratioOp{
			{at: -time.Minute, requests: 10, withdraw: 1, ok: 1, wantReq: 10, wantRet: 1},
			{at: 0, wantReq: 10, wantRet: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Now = at(t0)
			r := configtest.Must(NewRatio(cfg))(t)
			for i, op := range tc.ops {
				now := t0.Add(op.at)
				for range op.requests {
					r.RecordAt(now, Attempt{N: 1, Failed: i%2 == 0}) // outcome does not matter
				}
				ok := 0
				for range op.withdraw {
					if r.WithdrawAt(now, failure.Transient) {
						ok++
					}
				}
				if ok != op.ok {
					t.Fatalf("op %d at %v: %d of %d withdrawals allowed, want %d", i, op.at, ok, op.withdraw, op.ok)
				}
				if req, ret := r.Counts(now); req != op.wantReq || ret != op.wantRet {
					t.Fatalf("op %d at %v: Counts = %d requests, %d retries; want %d, %d", i, op.at, req, ret, op.wantReq, op.wantRet)
				}
			}
		})
	}
}

func TestRatioReadsClockOnlyWhenNeeded(t *testing.T) {
	reads := 0
	now := t0
	r := configtest.Must(NewRatio(RatioConfig{Now: func() time.Time { reads++; return now }}))(t)
	reads = 0 // NewRatio reads it once for the origin
	r.Record(Attempt{N: 1})
	r.Record(Attempt{N: 2, Failed: true})
	r.Record(Attempt{N: 3, Charged: failure.Timeout})
	if r.Withdraw(failure.Permanent) || reads != 0 {
		t.Fatalf("%d clock reads for attempts and a permanent failure, want 0", reads)
	}
	now = now.Add(time.Second)
	if !r.Withdraw(failure.Timeout) || reads != 1 {
		t.Fatalf("%d clock reads after a withdrawal, want 1", reads)
	}
	if req, ret := r.Counts(now); req != 1 || ret != 1 {
		t.Fatalf("Counts = %d, %d; want 1, 1", req, ret)
	}
}

// TestRatioRecordSpread checks where requests counted by Record (no
// clock) land: spread evenly over the time between two folds, so that the
// share recorded before the window is forgotten.
func TestRatioRecordSpread(t *testing.T) {
	tests := []struct {
		name     string
		at       time.Duration // when the requests are folded in
		want     int64         // requests counted in the window then
		withdraw bool          // fold with a withdrawal, not with Counts
	}{
		// 100 requests since the origin, folded 5 s later: all in the 10 s
		// window.
		{"within the window", 5 * time.Second, 100, false},
		// Folded 20 s later: the window's 20 slots of 500 ms then cover
		// [10.5 s, 20 s], 9.5 s of the 20: 47 of them.
		{"half before the window", 20 * time.Second, 47, false},
		{"folded by a withdrawal", 20 * time.Second, 47, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := configtest.Must(NewRatio(RatioConfig{NoFloor: true, Now: at(t0)}))(t)
			for range 100 {
				r.Record(Attempt{N: 1})
			}
			now := t0.Add(tc.at)
			wantRet := int64(0)
			if tc.withdraw {
				if !r.WithdrawAt(now, failure.Transient) {
					t.Fatal("withdrawal refused")
				}
				wantRet = 1
			}
			if req, ret := r.Counts(now); req != tc.want || ret != wantRet {
				t.Fatalf("Counts = %d, %d; want %d, %d", req, ret, tc.want, wantRet)
			}
		})
	}
}

func TestRatioPermanent(t *testing.T) {
	r, _ := NewRatio(RatioConfig{Now: at(t0)})
	if r.WithdrawAt(t0, failure.Permanent) {
		t.Fatal("a permanent failure was allowed a retry")
	}
	if _, ret := r.Counts(t0); ret != 0 {
		t.Fatalf("a refused withdrawal was counted: %d retries", ret)
	}
}
