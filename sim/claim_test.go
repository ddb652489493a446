package sim

import (
	"regexp"
	"slices"
	"testing"
)

// A claim merged over seeds holds only if it holds on every seed, lists
// the seeds that differ, and prints each figure's median with its range;
// a claim built without figures merges the numbers of its text.
func TestMerge(t *testing.T) {
	seeds := []uint64{3, 4, 5}
	per := []Claim{
		newClaim("src", "v is small", true, "v %.0f, half %.1f", 4, 2),
		newClaim("src", "v is small", false, "v %.0f, half %.1f", 6, 3),
		newClaim("src", "v is small", true, "v %.0f, half %.1f", 5, 2.5),
	}
	c := mergeClaims(seeds, per)
	if c.Holds || !slices.Equal(c.Differs, []uint64{4}) || !slices.Equal(c.Seeds, seeds) {
		t.Errorf("Holds %v, Differs %v, Seeds %v; want false, [4], %v", c.Holds, c.Differs, c.Seeds, seeds)
	}
	if want := "v 5 [4-6], half 2.5 [2.0-3.0]"; c.Measured != want {
		t.Errorf("Measured = %q, want %q", c.Measured, want)
	}

	text := []Claim{{Measured: "took 10 s", Holds: true}, {Measured: "took 12 s", Holds: true}, {Measured: "took 11 s", Holds: true}}
	if m := mergeClaims(seeds, text); m.Measured != "took 11 [10-12] s" || !m.Holds {
		t.Errorf("text claim merged to %q (holds %v), want %q, holding", m.Measured, m.Holds, "took 11 [10-12] s")
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// numberRE is the figure replaceNumbers finds, as a regexp.
var numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)

// FuzzReplaceNumbers checks the scanner against the regexp it stands for.
func FuzzReplaceNumbers(f *testing.F) {
	for _, s := range []string{"", "x", "12", "0.25 of 3.", "1-5 seeds", ".5", "1..2", "a1.2.3b", "peak 2.48x (0.5)", "٣ digits"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mark := func(tok string) string { return "<" + tok + ">" }
		if got, want := replaceNumbers(s, mark), numberRE.ReplaceAllStringFunc(s, mark); got != want {
			t.Errorf("replaceNumbers(%q) = %q, want %q", s, got, want)
		}
	})
}
