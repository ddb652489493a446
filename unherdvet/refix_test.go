package unherdvet

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// alsoFixes names, for a check, the finding of the same function its fix
// fixes too: the sleepctx fix waits on the context, which is also what
// the loop lacked to be bounded.
var alsoFixes = map[string]string{"sleepctx": "unbounded"}

// TestFixThenVet applies each suggested fix on its own to the loops of
// testdata/refix and vets the result again: the findings left must be
// exactly the ones the fix did not fix. A fix that hides the loop from
// vet (the notimeout fix puts the call inside an if) fails here.
func TestFixThenVet(t *testing.T) {
	before := vetCopy(t)
	var fixable []int
	for i, f := range before.findings {
		if f.Fix != nil {
			fixable = append(fixable, i)
		}
	}
	if len(fixable) < 4 {
		t.Fatalf("%d fixable findings in testdata/refix, want at least 4: %v", len(fixable), before.findings)
	}
	for _, i := range fixable {
		fixed := before.keys[i]
		t.Run(fixed, func(t *testing.T) {
			run := vetCopy(t)
			f := run.findings[i]
			if _, _, err := ApplyFixes([]Finding{f}); err != nil {
				t.Fatal(err)
			}
			after := vetDir(t, run.dir)
			want := slices.Delete(slices.Clone(before.keys), i, i+1)
			if also, ok := alsoFixes[f.Check]; ok {
				want = slices.DeleteFunc(want, func(k string) bool {
					return k == also+" in "+before.funcs[i]
				})
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(after.keys))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("findings after fixing %s (-want +got):\n%s", fixed, diff)
			}
		})
	}
}

// TestFixAllThenVet applies every fix at once, as unherd vet --fix does:
// the findings left are the ones whose fixes were not applied (two fixes
// of one wait overlap, and only the first goes in).
func TestFixAllThenVet(t *testing.T) {
	run := vetCopy(t)
	applied, _, err := ApplyFixes(run.findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 {
		t.Fatal("no fix applied")
	}
	fixed := make(map[string]bool) // keys of the findings the fixes remove
	for i, f := range run.findings {
		if slices.ContainsFunc(applied, func(a Finding) bool { return a.Line == f.Line && a.Check == f.Check }) {
			fixed[run.keys[i]] = true
			if also, ok := alsoFixes[f.Check]; ok {
				fixed[also+" in "+run.funcs[i]] = true
			}
		}
	}
	var want []string
	for _, k := range run.keys {
		if !fixed[k] {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(vetDir(t, run.dir).keys))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings after fixing %d of %d (-want +got):\n%s", len(applied), len(run.findings), diff)
	}
}

type vetRun struct {
	dir      string
	findings []Finding
	keys     []string // check and enclosing function of each finding
	funcs    []string // the enclosing function of each finding
}

// vetCopy copies testdata/refix into a module of its own and vets it.
func vetCopy(t *testing.T) vetRun {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "refix", "refix.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"go.mod":   []byte("module refix\n\ngo 1.25\n"),
		"refix.go": src,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return vetDir(t, dir)
}

func vetDir(t *testing.T, dir string) vetRun {
	t.Helper()
	findings, err := Check(dir, "./...")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join(dir, "refix.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	run := vetRun{dir: dir, findings: findings}
	for _, f := range findings {
		fn := "-"
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fset.Position(fd.Pos()).Line <= f.Line && f.Line <= fset.Position(fd.End()).Line {
				fn = fd.Name.Name
			}
		}
		run.keys = append(run.keys, fmt.Sprintf("%s in %s", f.Check, fn))
		run.funcs = append(run.funcs, fn)
	}
	return run
}
