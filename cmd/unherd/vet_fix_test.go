package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVetFix applies the fixes to a copy of the storm package: the
// constant delay becomes a jittered one, then (its fix overlapped the
// first, so it waits a run) the sleep becomes a select on the context;
// the third run type-checks the result and finds nothing.
func TestVetFix(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/vet/storm/storm.go")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "storm.go")
	if err := os.WriteFile(file, src, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module storm\n\ngo 1.25\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		code    int
		summary string
	}{
		{exitFailure, "fixed 1 of 2 findings in 1 files"},
		{exitOK, "fixed 1 of 1 findings in 1 files"},
		{exitOK, "fixed 0 of 0 findings in 0 files"},
	}
	for i, r := range runs {
		var out, errOut bytes.Buffer
		if code := run([]string{"vet", "--fix", dir}, &out, &errOut); code != r.code {
			t.Fatalf("run %d: exit code %d, want %d\nstdout: %s\nstderr: %s", i+1, code, r.code, out.String(), errOut.String())
		}
		if !strings.Contains(errOut.String(), r.summary) {
			t.Errorf("run %d: stderr = %q, want %q", i+1, errOut.String(), r.summary)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"math/rand/v2"`,
		"case <-ctx.Done():\n\t\t\treturn nil, ctx.Err()",
		"case <-time.After(time.Second/2 + rand.N(time.Second)):",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("fixed file lacks %q:\n%s", want, got)
		}
	}
}
