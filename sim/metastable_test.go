package sim

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tinyMetastable is the metastable scenario at a tenth of the rate with
// service times ten times as long: the same capacity over load, 2.65,
// and a tenth of the events, so that it runs under the race detector;
// its tipping-point map has two cuts and three lengths.
func tinyMetastable() *metastableParams {
	p := defaultMetastableParams()
	p.Rate, p.Service, p.After = 830, 10*time.Millisecond, 30*time.Second
	p.MapCuts, p.MapLengths = []int{70, 90}, []int{4, 8, 16}
	return p
}

func runTinyMetastable(t *testing.T, o Options) []byte {
	t.Helper()
	r, err := metastableScenario.Run(context.Background(), tinyMetastable(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 6 || len(r.Claims) != 6 {
		t.Fatalf("%d rows and %d claims; want 6 and 6 (Huang et al.'s four, two of the map)", len(r.Rows), len(r.Claims))
	}
	for i, row := range r.Rows {
		for _, c := range r.Columns {
			if _, ok := row[c]; !ok {
				t.Errorf("row %d lacks column %q", i, c)
			}
		}
	}
	return goldenJSON(t, r)
}

// TestMetastableDeterminism: the same seed gives the same output whatever
// the number of workers; another seed another output.
func TestMetastableDeterminism(t *testing.T) {
	one := runTinyMetastable(t, Options{Seed: 7, Workers: 1})
	three := runTinyMetastable(t, Options{Seed: 7, Workers: 3})
	if !bytes.Equal(one, three) {
		t.Errorf("1 worker and 3 workers differ:\n%s", cmp.Diff(string(one), string(three)))
	}
	if other := runTinyMetastable(t, Options{Seed: 8, Workers: 2}); bytes.Equal(one, other) {
		t.Error("seeds 7 and 8 gave identical output")
	}
}

func TestMetastableLookup(t *testing.T) {
	s, ok := Lookup("metastable")
	if !ok || s.Population() != "open" || s.Describe() == "" {
		t.Fatalf("Lookup(metastable) = %v, %v", s, ok)
	}
	p := s.Params()
	if err := p.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	p.Quick()
	if err := p.Validate(); err != nil {
		t.Errorf("quick: %v", err)
	}
	if _, err := s.Run(context.Background(), &stormParams{}, Options{}); err == nil {
		t.Error("metastable ran with stormParams")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Run(ctx, tinyMetastable(), Options{}); err == nil {
		t.Error("metastable ran with a cancelled context")
	}
}

func TestMetastableValidate(t *testing.T) {
	for name, set := range map[string]func(p *metastableParams){
		"cut":             func(p *metastableParams) { p.Cut = 1 },
		"rate":            func(p *metastableParams) { p.Rate = 2e5 },
		"before":          func(p *metastableParams) { p.Before = time.Second },
		"after":           func(p *metastableParams) { p.After = time.Hour },
		"map-cuts order":  func(p *metastableParams) { p.MapCuts = []int{80, 70} },
		"map-cuts 100":    func(p *metastableParams) { p.MapCuts = []int{100} },
		"map-lengths":     func(p *metastableParams) { p.MapLengths = nil },
		"map-lengths run": func(p *metastableParams) { p.MapLengths = []int{600} },
	} {
		p := defaultMetastableParams()
		set(p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, *p)
		}
	}
}

// TestMetastableStopAgrees: a run stopped early as provably down stays
// down when it runs to its end, with no goodput over its last 10 s, and
// a map cell stopped early as recovered is judged recovered at the end.
func TestMetastableStopAgrees(t *testing.T) {
	p := tinyMetastable()
	for _, c := range []msCase{
		{p.Cut, p.Length, 1, msResend, outcomeDown},
		{p.Cut, p.ShortLength, 1, msResend, outcomeRecovers},
	} {
		pol, err := c.retryPolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, full := range []bool{false, true} {
			m := msModel{rate: p.Rate, threads: p.Threads, service: p.Service, timeout: p.Timeout,
				from: p.Before, to: p.Before + c.length, cut: c.cut, end: p.Before + c.length + p.After,
				stopUp: true, full: full, resends: true}
			st, err := runMetastable(context.Background(), 3, 0, m, pol)
			if err != nil {
				t.Fatal(err)
			}
			if full == (st.stopped != 0) {
				t.Errorf("%v for %v, full %v: stopped at %v", c.cut, c.length, full, st.stopped)
			}
			r := measureMetastable(p, c, st)
			outcomes = append(outcomes, r.outcome)
			if full && c.published == outcomeDown && r.after != 0 {
				t.Errorf("%v for %v: goodput %v/s over the last 10 s of the full run; want 0", c.cut, c.length, r.after)
			}
		}
		if want := []string{c.published, c.published}; !cmp.Equal(outcomes, want) {
			t.Errorf("%v for %v: outcomes stopped early and in full %v; want %v", c.cut, c.length, outcomes, want)
		}
	}
}
