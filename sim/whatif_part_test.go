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
			whole, err := whatIf(ctx, p, o, op, sp, tinyMetastable())
			if err != nil {
				t.Fatal(err)
			}
			// Each part made alone, then sent through JSON as the page
			// sends them between its workers.
			var parts []*WhatIfPart
			for _, pop := range []string{populationOpen, populationClosed} {
				for _, def := range []bool{true, false} {
					made, err := whatIfParts(ctx, p, o, op, sp, tinyMetastable(), func(closed bool, spec int) bool {
						return closed == (pop == populationClosed) && (spec == 1) == def
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(made) != 1 || made[0].Population != pop || made[0].Default != def {
						t.Fatalf("parts of %s, default %v: got %d parts, %+v", pop, def, len(made), made)
					}
					b, err := json.Marshal(made[0])
					if err != nil {
						t.Fatal(err)
					}
					var part WhatIfPart
					if err := json.Unmarshal(b, &part); err != nil {
						t.Fatal(err)
					}
					parts = append(parts, &part)
				}
			}
			merged, err := mergeWhatIf(p, op, sp, parts)
			if err != nil {
				t.Fatal(err)
			}
			mj, _ := json.Marshal(merged)
			wj, _ := json.Marshal(whole)
			if string(mj) != string(wj) {
				t.Errorf("%s, seed %d: merged JSON differs:\n%s\n%s", p.Name, seed, mj, wj)
			}
			if !reflect.DeepEqual(merged.Results[0].Charts, whole.Results[0].Charts) || !reflect.DeepEqual(merged.Results[0].Columns, whole.Results[0].Columns) {
				t.Errorf("%s, seed %d: merged charts or columns differ from the whole report's", p.Name, seed)
			}
		}
	}
}

func TestWhatIfRunAndMergeRefuseOthers(t *testing.T) {
	if _, err := WhatIfRun(context.Background(), Policy{}, Options{}, "both", false); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("population both: got %v, want ErrInvalidParams", err)
	}
	closed := &WhatIfPart{Population: populationClosed}
	for name, parts := range map[string][]*WhatIfPart{
		"none":     nil,
		"one":      {closed},
		"twice":    {closed, closed, {Population: populationOpen}, {Population: populationOpen, Default: true}},
		"unknown":  {{Population: "half-open"}},
		"nil part": {nil},
	} {
		if _, err := MergeWhatIf(Policy{}, parts); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: got %v, want ErrInvalidParams", name, err)
		}
	}
}
