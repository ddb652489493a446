package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/internal/golden"
	"github.com/unherd/unherd/sim"
)

func entries() []Entry {
	return []Entry{
		{
			Name:        "fake",
			Description: "A fake scenario for tests.",
			Result: &sim.Result{
				Scenario:   "fake",
				Population: "closed",
				Params:     map[string]any{"clients": []int{10, 20}, "runs": 3, "policy": map[string]any{"name": "x|y"}},
				Columns:    []string{"strategy", "clients", "calls"},
				Rows: []sim.Row{
					{"strategy": "none", "clients": 10, "calls": 4.5},
					{"strategy": "full", "clients": 20, "calls": 2.125},
				},
				Claims: []sim.Claim{{Source: "Paper 2015", Claim: "full halves calls", Measured: "0.47x", Holds: true}},
				Charts: []sim.Chart{
					{Name: "calls", Title: "Calls", XLabel: "clients", YLabel: "calls",
						Series: []sim.Series{{Name: "none", X: []float64{10, 20}, Y: []float64{4.5, 9}}}},
					{Name: "empty", Title: "Nothing"},
				},
			},
		},
		{Name: "broken", Description: "A scenario that fails.", Err: errors.New("boom")},
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	files, err := Write(dir, Header{Seed: 7, Command: "unherd report --seed 7"}, entries())
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, f := range files {
		r, _ := filepath.Rel(dir, f)
		rel = append(rel, r)
	}
	want := []string{"report.md", "fake.csv", "fake-calls.png", "fake-calls.svg"}
	if diff := cmp.Diff(want, rel); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v, empty or missing", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	want2 := golden.Want(t, filepath.Join("testdata", "report.md.golden"), md)
	if diff := cmp.Diff(string(want2), string(md)); diff != "" {
		t.Fatalf("report.md (-want +got):\n%s", diff)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"calls": "calls", "a/b c": "a-b-c", "": "unnamed", "../x": "---x"} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
	if strings.ContainsAny(safeName("é\\:"), "\\:é") {
		t.Error("unsafe characters kept")
	}
}

// A link planted in the output folder under a name the report writes is
// never written through: Write fails with ErrLink and the link's target
// keeps its content.
func TestWriteRefusesLinks(t *testing.T) {
	for _, name := range []string{"report.md", "fake.csv", "fake-calls.svg"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			_, err := Write(dir, Header{Seed: 7, Command: "unherd report --seed 7"}, entries())
			if !errors.Is(err, ErrLink) {
				t.Errorf("Write with %s a link: %v, want ErrLink", name, err)
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != "precious" {
				t.Errorf("the link's target holds %q, %v; want it untouched", got, err)
			}
		})
	}
}
