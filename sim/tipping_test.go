package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTippingPointsWorkers: the map is the same on 1 worker and on 4,
// cell for cell, and the policies' boundaries are where the small model
// puts them: resends tip, the default never. (The small model's limiter,
// with service times ten times the published, turns away part of the
// load before any trigger: its runs are unhealthy, and count as down.)
func TestTippingPointsWorkers(t *testing.T) {
	p := tinyMetastable()
	one, err := TippingPoints(context.Background(), p, Options{Seed: 5, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	four, err := TippingPoints(context.Background(), p, Options{Seed: 5, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(one, four); diff != "" {
		t.Errorf("1 worker and 4 differ (-1 +4):\n%s", diff)
	}
	if len(one.Policies) != 3 {
		t.Fatalf("%d policies; want 3", len(one.Policies))
	}
	for _, pol := range one.Policies {
		t.Logf("%s: boundary %v, margin %v, %d runs, %d unhealthy", pol.Name, pol.Boundary, pol.Margin, pol.Runs, pol.Unhealthy)
		if len(pol.Boundary) != len(p.MapCuts) || pol.Runs < 1 {
			t.Errorf("%s: %d boundaries from %d runs for %d cuts", pol.Name, len(pol.Boundary), pol.Runs, len(p.MapCuts))
		}
		switch tips := pol.Margin != nil; {
		case pol.Name == msLimited:
			if tips != (pol.Unhealthy > 0) {
				t.Errorf("%s: margin %v with %d unhealthy runs", pol.Name, pol.Margin, pol.Unhealthy)
			}
		case tips != (pol.Name == msResend) || pol.Unhealthy > 0:
			t.Errorf("%s: margin %v, %d unhealthy runs", pol.Name, pol.Margin, pol.Unhealthy)
		}
	}
	if m := one.Policies[0].Margin; m != nil && (m.Work() <= 0 || m.String() == "") {
		t.Errorf("resend margin %v: work %v", m, m.Work())
	}
}

// TestTippingCellStream: a cell's stream depends on its trigger alone.
func TestTippingCellStream(t *testing.T) {
	a := tipStream(Trigger{Cut: 0.8, Length: 10 * time.Second})
	if a != tipStream(Trigger{Cut: 0.8, Length: 10 * time.Second}) {
		t.Error("one trigger, two streams")
	}
	if a == tipStream(Trigger{Cut: 0.8, Length: 9 * time.Second}) || a == tipStream(Trigger{Cut: 0.78, Length: 10 * time.Second}) {
		t.Error("two triggers, one stream")
	}
}

func TestTippingPointsInvalid(t *testing.T) {
	p := tinyMetastable()
	p.MapCuts = []int{90, 80}
	if _, err := TippingPoints(context.Background(), p, Options{}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("descending cuts: err = %v, want ErrInvalidParams", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := TippingPoints(ctx, tinyMetastable(), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
