package table

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/internal/golden"
	"github.com/unherd/unherd/sim"
)

// checkGolden compares got with testdata/name, or rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	want := golden.Want(t, path, got)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, diff)
	}
}

// small is a result shaped like the jitter scenario's, small enough to
// read in a golden file.
func small() *sim.Result {
	return &sim.Result{
		Scenario:   "fake",
		Population: "closed",
		Columns:    []string{"strategy", "clients", "calls", "time_ms"},
		Rows: []sim.Row{
			{"strategy": "none", "clients": 10, "calls": 4.5, "time_ms": 123.456},
			{"strategy": "full", "clients": 10, "calls": 2.25, "time_ms": 98.7654321},
			{"strategy": "decorrelated", "clients": 100, "calls": 12.0, "time_ms": 1234.5678},
			{"strategy": "a|b", "clients": 1000},
		},
		Claims: []sim.Claim{
			{Source: "Brooker 2015", Claim: "full jitter halves the calls", Measured: "0.5x", Holds: true},
			{Source: "Brooker 2015", Claim: "none is slowest", Measured: "1.25x", Holds: false},
		},
	}
}

func TestGolden(t *testing.T) {
	r := small()
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"text.golden", func(b *bytes.Buffer) error {
			if err := Text(b, r); err != nil {
				return err
			}
			b.WriteString("\n")
			return ClaimsText(b, r.Claims)
		}},
		{"markdown.golden", func(b *bytes.Buffer) error {
			if err := Markdown(b, r); err != nil {
				return err
			}
			b.WriteString("\n")
			return ClaimsMarkdown(b, r.Claims)
		}},
		{"csv.golden", func(b *bytes.Buffer) error { return CSV(b, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, b.Bytes())
		})
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{0.5, "0.5"},
		{2.25, "2.25"},
		{12.3456, "12.35"},
		{123.456, "123.5"},
		{1234.5678, "1235"},
		{1234567.8, "1234568"},
		{-3.14159, "-3.142"},
		{0.00012346, "0.0001235"},
		{0.00001234, "1.234e-05"},
		{1e20, "1e+20"},
	}
	for _, tc := range tests {
		if got := Float(tc.in); got != tc.want {
			t.Errorf("Float(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestColumnsFromRows(t *testing.T) {
	r := &sim.Result{Rows: []sim.Row{{"b": 1}, {"a": 2, "b": 3}}}
	if diff := cmp.Diff([]string{"a", "b"}, Columns(r)); diff != "" {
		t.Fatalf("columns (-want +got):\n%s", diff)
	}
}

func TestNoClaims(t *testing.T) {
	var b bytes.Buffer
	if err := ClaimsText(&b, nil); err != nil || b.Len() != 0 {
		t.Fatalf("ClaimsText(nil) wrote %q, %v", b.String(), err)
	}
}

func TestSeedSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    sim.Claim
		want string
	}{
		{"one run", sim.Claim{}, ""},
		{"one seed", sim.Claim{Seeds: []uint64{4}}, "seed 4"},
		{"all agree", sim.Claim{Seeds: []uint64{3, 4, 5}}, "3 seeds (3-5)"},
		{"some differ", sim.Claim{Seeds: []uint64{3, 4, 5, 6, 7}, Differs: []uint64{4, 6}}, "5 seeds (3-7); differs on 4, 6"},
		{"pooled", sim.Claim{Seeds: []uint64{1, 2}, Differs: []uint64{2}, Pooled: true}, "2 seeds (1-2) pooled; alone, too few samples to judge, seeds 2 differ"},
	} {
		if got := seedSummary(tc.c); got != tc.want {
			t.Errorf("%s: seedSummary = %q, want %q", tc.name, got, tc.want)
		}
	}
}
