package sim

import (
	"context"
	"testing"
	"time"
)

func TestMetastableProbe(t *testing.T) {
	p := defaultMetastableParams()
	for seed := uint64(1); seed <= 5; seed++ {
		start := time.Now()
		r, err := runMetastableScenario(context.Background(), p, Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d took %v", seed, time.Since(start))
		for _, row := range r.Rows {
			t.Logf("%v", row)
		}
	}
}
