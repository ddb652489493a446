package limit

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestPriorityStringParse(t *testing.T) {
	for _, p := range []Priority{Normal, Critical, Sheddable} {
		got, err := ParsePriority(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePriority(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
		got, err = ParsePriority(" " + strings.ToUpper(p.String()) + "\t")
		if err != nil || got != p {
			t.Errorf("ParsePriority of upper-case %q = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if s := Priority(7).String(); s != "Priority(7)" {
		t.Errorf("Priority(7).String() = %q", s)
	}
	for _, s := range []string{"", "urgent", "critical!", "Priority(1)", "1"} {
		if p, err := ParsePriority(s); !errors.Is(err, ErrInvalidPriority) || p != Normal {
			t.Errorf("ParsePriority(%q) = %v, %v; want Normal and ErrInvalidPriority", s, p, err)
		}
	}
}

func TestPriorityContext(t *testing.T) {
	ctx := context.Background()
	if p := PriorityFromContext(ctx); p != Normal {
		t.Errorf("no priority in the context: %v, want normal", p)
	}
	if p := PriorityFromContext(WithPriority(ctx, Sheddable)); p != Sheddable {
		t.Errorf("WithPriority(Sheddable): %v", p)
	}
}

// FuzzParsePriority: any header value either parses to one of the three
// priorities, whose String parses back to it, or is an error wrapping
// ErrInvalidPriority with a message of bounded length.
func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"critical", "NORMAL", " Sheddable ", "", "crit\x00ical", "Priority(3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePriority(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidPriority) {
				t.Fatalf("ParsePriority(%q): %v does not wrap ErrInvalidPriority", s, err)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("ParsePriority(%q): error of %d bytes", s, len(err.Error()))
			}
			return
		}
		if p != Normal && p != Critical && p != Sheddable {
			t.Fatalf("ParsePriority(%q) = %d", s, p)
		}
		if q, err := ParsePriority(p.String()); err != nil || q != p {
			t.Fatalf("round trip of %v: %v, %v", p, q, err)
		}
	})
}

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lim      int64
		share    float64
		critical bool
		want     [3]int64 // Critical, Normal, Sheddable
	}{
		{"limit 20, share 0.1", 20, 0.1, true, [3]int64{20, 18, 16}},
		{"limit 30: 0.1*30 rounds to 3, not 4", 30, 0.1, true, [3]int64{30, 27, 24}},
		{"limit 5: 0.5 rounds up to 1", 5, 0.1, true, [3]int64{5, 4, 3}},
		{"limit 3: reserve 1", 3, 0.1, true, [3]int64{3, 2, 1}},
		{"limit 2: no reserve, every priority gets a slot", 2, 0.1, true, [3]int64{2, 2, 2}},
		{"limit 1: Normal and Sheddable still get 1", 1, 0.5, true, [3]int64{1, 1, 1}},
		{"limit 10, share 0.5: reserve capped at 4", 10, 0.5, true, [3]int64{10, 6, 2}},
		{"no Critical seen: Normal fills the limit", 20, 0.1, false, [3]int64{20, 20, 18}},
		{"no reserve", 20, 0, true, [3]int64{20, 20, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, p := range []Priority{Critical, Normal, Sheddable} {
				if got := threshold(p, tc.lim, tc.share, tc.critical); got != tc.want[i] {
					t.Errorf("%v: threshold %d, want %d", p, got, tc.want[i])
				}
			}
			if got := threshold(Priority(9), tc.lim, tc.share, tc.critical); got != tc.want[2] {
				t.Errorf("Priority(9): threshold %d, want Sheddable's %d", got, tc.want[2])
			}
		})
	}
}

// With a limit of 10 and the default share, once a Critical request has
// come, Normal stops at 9 and Sheddable at 8; Critical fills the limit.
func TestAcquirePriority(t *testing.T) {
	l, err := New(Config{Algorithm: Fixed(10)})
	if err != nil {
		t.Fatal(err)
	}
	var toks []Token
	for range 10 {
		tok, ok := l.AcquirePriority(epoch, Normal)
		if !ok {
			break
		}
		toks = append(toks, tok)
	}
	if len(toks) != 10 {
		t.Fatalf("before any Critical request, %d Normal admitted, want the whole limit 10", len(toks))
	}
	for _, tok := range toks {
		tok.Ignore()
	}
	toks = toks[:0]
	admit := func(p Priority) bool {
		tok, ok := l.AcquirePriority(epoch, p)
		if ok {
			toks = append(toks, tok)
		}
		return ok
	}
	admit(Critical)
	for admit(Sheddable) {
	}
	if l.InFlight() != 8 {
		t.Fatalf("Sheddable filled to %d, want 8", l.InFlight())
	}
	for admit(Normal) {
	}
	if l.InFlight() != 9 {
		t.Fatalf("Normal filled to %d, want 9", l.InFlight())
	}
	if !admit(Critical) || admit(Critical) {
		t.Fatalf("Critical: want one more admitted, then refused at 10 (in flight %d)", l.InFlight())
	}
	for _, tok := range toks {
		tok.Served(epoch)
	}
	if l.InFlight() != 0 {
		t.Fatalf("in flight %d after all released", l.InFlight())
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, cfg := range []Config{
		{CriticalShare: 0.51},
		{CriticalShare: math.NaN()},
		{MaxWaiters: -1},
		{CongestedWait: -1},
		{CongestionInterval: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := New(Config{CriticalShare: -1}); err != nil {
		t.Errorf("a negative CriticalShare means none: %v", err)
	}
}
