package lognormal_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/lognormal"
)

func TestDrawWithoutSpreadIsTheMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 10 {
		if got := lognormal.Draw(r, 10*time.Millisecond, 0); got != 10*time.Millisecond {
			t.Fatalf("Draw(10ms, sigma 0) = %v, want 10ms", got)
		}
	}
}

func TestSampleRepeats(t *testing.T) {
	a, b := lognormal.Sample(1000, 10*time.Millisecond, 0.5), lognormal.Sample(1000, 10*time.Millisecond, 0.5)
	if !slices.Equal(a, b) {
		t.Fatal("two Samples of the same size differ")
	}
	s := slices.Sorted(slices.Values(a))
	if med := s[len(s)/2]; med < 9*time.Millisecond || med > 11*time.Millisecond {
		t.Errorf("median of 1000 draws around 10ms = %v, want within 10%%", med)
	}
	if s[0] <= 0 {
		t.Errorf("smallest draw %v, want positive", s[0])
	}
}
