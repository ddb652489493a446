package unherdvet

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGroupPatterns sorts patterns by the module their directory is in:
// root/a (module a, with a package below it), root/b (module b) and
// root/plain (no module).
func TestGroupPatterns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/x/y", "b", "plain"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(root, m, "go.mod"), []byte("module "+m+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		Dir      string
		Patterns []string
	}
	for _, tc := range []struct {
		name     string
		dir      string // relative to root
		patterns []string
		want     []row
	}{
		{"inside", "a", []string{".", "./x/..."}, []row{{"a", []string{".", "./x/..."}}}},
		{"from above", ".", []string{"./a/x", "./a/...", "./b"}, []row{{"a", []string{"./x", "./..."}}, {"b", []string{"."}}}},
		{"partial wildcard", ".", []string{"./a/x/y..."}, []row{{"a", []string{"./x/y..."}}}},
		{"from a sibling", "b", []string{"../a/x/y", "../a/x/..."}, []row{{"a", []string{"./x/y", "./x/..."}}}},
		{"import paths stay", "b", []string{"std", "example.com/x/..."}, []row{{"b", []string{"std", "example.com/x/..."}}}},
		{"missing directory", ".", []string{"./a/nothere"}, []row{{"a", []string{"./nothere"}}}},
		{"file", ".", []string{"./a/x/f.go"}, []row{{"a", []string{"./x/f.go"}}}},
		{"no module", ".", []string{"./plain"}, []row{{".", []string{"./plain"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []row
			for _, g := range groupPatterns(filepath.Join(root, tc.dir), tc.patterns) {
				rel, err := filepath.Rel(root, g.dir)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, row{filepath.ToSlash(rel), g.patterns})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTooDeep counts nested blocks (loops, branches, function literals),
// not else-if chains or expressions.
func TestTooDeep(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		ok   bool
	}{
		{"loops at the limit", strings.Repeat("for {\n", MaxNesting-1) + strings.Repeat("}\n", MaxNesting-1), true},
		{"loops past the limit", strings.Repeat("for {\n", MaxNesting) + strings.Repeat("}\n", MaxNesting), false},
		{"closures past the limit", strings.Repeat("func() {\n", MaxNesting) + strings.Repeat("}()\n", MaxNesting), false},
		{"long else-if chain", "x := 0\nif x == 0 {\n}" + strings.Repeat(" else if x == 1 {\n}", 2*MaxNesting) + "\n", true},
		{"deep expression", "_ = " + strings.Repeat("(", 5*MaxNesting) + "1" + strings.Repeat(")", 5*MaxNesting) + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n\nfunc F() {\n" + tc.body + "}\n"
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tooDeep(f, MaxNesting); ok != tc.ok {
				t.Errorf("tooDeep ok = %v, want %v", ok, tc.ok)
			}
		})
	}
}

// TestRunCancelled returns the context's error when it is done before
// loading starts.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, "", "./testdata/example"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// TestRunFailure checks the good package when a pattern names one that
// does not exist.
func TestRunFailure(t *testing.T) {
	res, err := Run(context.Background(), "", "./testdata/example", "./testdata/missing")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 || res.Findings[0].Check != "nojitter" {
		t.Errorf("findings = %v, want the example's nojitter", res.Findings)
	}
	if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].String(), "testdata/missing") {
		t.Errorf("failures = %v, want ./testdata/missing", res.Failures)
	}
	if _, err := Check("", "./testdata/example", "./testdata/missing"); !errors.Is(err, ErrLoad) {
		t.Errorf("Check = %v, want ErrLoad", err)
	}
}
