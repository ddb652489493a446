package core

import (
	"context"
	"errors"
	"testing"

	"github.com/unherd/unherd/admission"
	"github.com/unherd/unherd/budget"
)

// TestRequestInFlight: a budget that counts requests in flight
// (budget.Concurrency) sees every request leave however it ends: a copy
// that ran, was abandoned or was never sent gives its retry back once,
// and so does one a guard rejected.
func TestRequestInFlight(t *testing.T) {
	rejectAll := guardFunc(func(context.Context) error { return errors.New("test: rejected") })
	for _, tc := range []struct {
		name   string
		guards bool
		end    func(r *Request)
	}{
		{"success", false, func(r *Request) { r.End(nil) }},
		{"failure", false, func(r *Request) { r.End(errors.New("test: failed")) }},
		{"abandoned", false, func(r *Request) { r.Abandon() }},
		{"cancelled", false, func(r *Request) { r.Cancel() }},
		{"ended twice", false, func(r *Request) { r.Cancel(); r.End(nil); r.Abandon() }},
		{"rejected by a guard", true, nil},
	} {
		for _, copy := range []bool{false, true} {
			b, err := budget.NewConcurrency(budget.ConcurrencyConfig{MinRetries: 10})
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Budget: b}
			if tc.guards {
				cfg.Guards = append(cfg.Guards, rejectAll)
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var r Request
			err = r.Admit(context.Background(), p, copy)
			if tc.end != nil {
				if err != nil {
					t.Fatalf("%s: AdmitRequest: %v", tc.name, err)
				}
				tc.end(&r)
			} else if !errors.Is(err, ErrRejected) {
				t.Fatalf("%s: AdmitRequest: %v, want ErrRejected", tc.name, err)
			}
			if a, rs := b.InFlight(); a != 0 || rs != 0 {
				t.Errorf("%s (copy %v): %d requests and %d retries still in flight, want none", tc.name, copy, a, rs)
			}
		}
	}
}

// guardFunc is an admission.Guard whose admission is a function.
type guardFunc func(context.Context) error

func (g guardFunc) Admit(ctx context.Context) (uint64, error)     { return 0, g(ctx) }
func (guardFunc) Done(context.Context, uint64, admission.Outcome) {}
