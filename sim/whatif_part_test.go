package sim

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

// The two populations' parts, made apart and merged, are the report made
// at once: rows, verdicts, overall judgement and charts, for several
// policies and seeds.
func TestMergeWhatIfEqualsWhatIf(t *testing.T) {
	op, sp := defaultOutageParams(), defaultStormParams()
	op.Clients, op.Rate, op.Capacity = 40, 400, 800
	op.Before, op.Down, op.After = 2*time.Second, 3*time.Second, 3*time.Second
	sp.Clients, sp.Duration = 20, 10*time.Second
	policies := []Policy{
		{Name: "five", Retry: retry.Config{MaxAttempts: 5, Backoff: backoff.Schedule{Jitter: backoff.None}}, Budget: "none"},
		{Name: "default"},
		{Name: "two", Retry: retry.Config{MaxAttempts: 2, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: time.Second}}, Budget: "ratio", BudgetRatio: 0.2},
	}
	ctx := context.Background()
	for _, p := range policies {
		for _, seed := range []uint64{1, 7, 42} {
			o := Options{Seed: seed}
			whole, err := whatIf(ctx, p, o, op, sp, "")
			if err != nil {
				t.Fatal(err)
			}
			closed, err := whatIf(ctx, p, o, op, sp, populationClosed)
			if err != nil {
				t.Fatal(err)
			}
			open, err := whatIf(ctx, p, o, op, sp, populationOpen)
			if err != nil {
				t.Fatal(err)
			}
			merged, err := MergeWhatIf(closed, open)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(merged, whole) {
				for i := range whole.Results {
					t.Errorf("%s, seed %d: merged parts differ from the whole report; result %d:\nmerged %+v\nwhole  %+v", p.Name, seed, i, merged.Results[i], whole.Results[i])
				}
			}
			mj, _ := json.Marshal(merged)
			wj, _ := json.Marshal(whole)
			if string(mj) != string(wj) {
				t.Errorf("%s, seed %d: merged JSON differs:\n%s\n%s", p.Name, seed, mj, wj)
			}
		}
	}
}

func TestWhatIfPopulationRefusesOthers(t *testing.T) {
	if _, err := WhatIfPopulation(context.Background(), Policy{}, Options{}, "both"); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("population both: got %v, want ErrInvalidParams", err)
	}
	closed := &WhatIfReport{Verdicts: []Verdict{{Population: populationClosed}}, Results: []*Result{{}, {}}}
	if _, err := MergeWhatIf(closed, closed); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("two closed parts: got %v, want ErrInvalidParams", err)
	}
}
