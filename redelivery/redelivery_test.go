package redelivery

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name      string
		p         Policy
		delivered int
		u         uint64
		want      time.Duration
	}{
		// The highest draw shows the ceiling: 5s doubling to 5min.
		{"first delivery failed", Policy{}, 1, math.MaxUint64, 5 * time.Second},
		{"second", Policy{}, 2, math.MaxUint64, 10 * time.Second},
		{"seventh reaches the cap", Policy{}, 7, math.MaxUint64, 5 * time.Minute},
		{"a huge count stays at the cap", Policy{}, math.MaxInt, math.MaxUint64, 5 * time.Minute},
		{"zero counts as the first", Policy{}, 0, math.MaxUint64, 5 * time.Second},
		{"negative counts as the first", Policy{}, -3, math.MaxUint64, 5 * time.Second},
		{"full jitter, lowest draw", Policy{}, 3, 0, 0},
		{"equal jitter keeps half", Policy{Jitter: backoff.Equal}, 3, 0, 10 * time.Second},
		{"none", Policy{Base: time.Second, Cap: time.Minute, Jitter: backoff.None}, 4, 0, 8 * time.Second},
		// Decorrelated: [base, 3*prev], prev standing in as the previous
		// retry's ceiling (2s for the third delivery): at most 6s.
		{"decorrelated", Policy{Base: time.Second, Jitter: backoff.Decorrelated}, 3, math.MaxUint64, 6 * time.Second},
		{"decorrelated first", Policy{Base: time.Second, Jitter: backoff.Decorrelated}, 1, math.MaxUint64, 3 * time.Second},
		{"a base above the default cap raises the cap", Policy{Base: 10 * time.Minute}, 3, math.MaxUint64, 10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tt.p.Delay(tt.delivered, tt.u); got != tt.want {
				t.Errorf("Delay(%d, %#x) = %v, want %v", tt.delivered, tt.u, got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	p := Policy{MaxDeliveries: 3, Jitter: backoff.None}
	tests := []struct {
		name      string
		delivered int
		class     failure.Class
		want      Decision
	}{
		{"transient, first", 1, failure.Transient, Decision{Delay: 5 * time.Second}},
		{"timeout, second", 2, failure.Timeout, Decision{Delay: 10 * time.Second}},
		{"throttled uses the same schedule", 2, failure.Throttled, Decision{Delay: 10 * time.Second}},
		{"third of three is exhausted", 3, failure.Transient, Decision{DeadLetter: true}},
		{"past the limit", 9, failure.Transient, Decision{DeadLetter: true}},
		{"permanent at once", 1, failure.Permanent, Decision{DeadLetter: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Decide(tt.delivered, tt.class, 0); got != tt.want {
				t.Errorf("Decide(%d, %v) = %+v, want %+v", tt.delivered, tt.class, got, tt.want)
			}
		})
	}
	if (Policy{}).Exhausted(DefaultMaxDeliveries-1) || !(Policy{}).Exhausted(DefaultMaxDeliveries) {
		t.Errorf("the zero Policy dead-letters at delivery %d, no sooner", DefaultMaxDeliveries)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
	}{
		{"negative base", Policy{Base: -1}},
		{"negative cap", Policy{Cap: -1}},
		{"base above cap", Policy{Base: time.Minute, Cap: time.Second}},
		{"unknown jitter", Policy{Jitter: backoff.None + 1}},
		{"negative deliveries", Policy{MaxDeliveries: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, backoff.ErrInvalid) && tt.p.MaxDeliveries >= 0 {
				t.Errorf("Validate() = %v, want an error wrapping ErrInvalid (and backoff's for a schedule fault)", err)
			}
		})
	}
	if err := (Policy{}).Validate(); err != nil {
		t.Errorf("zero Policy: %v", err)
	}
}

func FuzzDelay(f *testing.F) {
	f.Add(int64(0), int64(0), uint8(0), 1, uint64(0))
	f.Add(int64(time.Second), int64(math.MaxInt64), uint8(2), math.MaxInt, uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, base, capd int64, j uint8, delivered int, u uint64) {
		p := Policy{Base: time.Duration(base), Cap: time.Duration(capd), Jitter: backoff.Jitter(j)}
		if p.Validate() != nil {
			return
		}
		c := p.schedule().Cap
		if got := p.Delay(delivered, u); got < 0 || got > c {
			t.Fatalf("%+v: Delay(%d, %d) = %v, outside [0, %v]", p, delivered, u, got, c)
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	var p Policy
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = p.Decide(i&7+1, failure.Transient, uint64(i)*0x9e3779b97f4a7c15)
	}
}
