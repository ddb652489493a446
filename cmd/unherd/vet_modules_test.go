package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// These tests load modules written into t.TempDir(), from a directory
// outside them, as a user runs unherd vet on a checkout.

// naiveSrc is the README's hand-written loop (testdata/vet/before), in
// package naive: three findings.
func naiveSrc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vet", "before", "fetch.go"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "package fetch", "package naive", 1)
}

// brokenSrc does not type-check.
const brokenSrc = "package broken\n\nfunc F() int { return undefined }\n"

// cleanSrc has nothing to find.
const cleanSrc = "package clean\n\nfunc F() int { return 1 }\n"

// vetIn runs unherd vet args in dir, as if started there.
func vetIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	old := vetDir
	vetDir = dir
	defer func() { vetDir = old }()
	var out, errOut bytes.Buffer
	code = run(append([]string{"vet"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// checksOf returns the file and check of each finding line.
func checksOf(out string) []string {
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		file, rest, _ := strings.Cut(line, ": ")
		check, _, _ := strings.Cut(rest, ":")
		got = append(got, filepath.ToSlash(file)+" "+check)
	}
	return got
}

// workspace writes a directory holding the module example.com/m (in
// m/, its packages in files) and returns the directory, which is outside
// every module.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "m", "go.mod"), "module example.com/m\n\ngo 1.25\n")
	for name, src := range files {
		write(t, filepath.Join(root, filepath.FromSlash(name)), src)
	}
	return root
}

// TestVetOutsideModule runs vet on a package of a module from the
// directory above it: the package loads in its own module and the
// README's three findings come out, as they do from inside.
func TestVetOutsideModule(t *testing.T) {
	root := workspace(t, map[string]string{"m/naive/naive.go": naiveSrc(t)})
	want := []string{
		"m/naive/naive.go:13 notimeout",
		"m/naive/naive.go:16 nojitter",
		"m/naive/naive.go:16 sleepctx",
	}
	for _, tc := range []struct {
		name string
		dir  string
		arg  string
	}{
		{"relative", root, "./m/naive"},
		{"wildcard", root, "./m/..."},
		{"absolute", t.TempDir(), filepath.Join(root, "m", "naive")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := vetIn(t, tc.dir, tc.arg)
			if code != exitFailure {
				t.Errorf("exit code %d, want %d; stderr: %s", code, exitFailure, errOut)
			}
			got := checksOf(out)
			if tc.name == "absolute" {
				// Files outside the current directory keep their
				// absolute names.
				for i := range got {
					got[i] = strings.TrimPrefix(got[i], filepath.ToSlash(root)+"/")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s\nstdout: %s\nstderr: %s", diff, out, errOut)
			}
		})
	}
}

// TestVetTwoModules runs vet on packages of two modules at once.
func TestVetTwoModules(t *testing.T) {
	root := workspace(t, map[string]string{"m/naive/naive.go": naiveSrc(t)})
	write(t, filepath.Join(root, "other", "go.mod"), "module example.com/other\n\ngo 1.25\n")
	write(t, filepath.Join(root, "other", "naive.go"), strings.Replace(naiveSrc(t), "package naive", "package other", 1))
	code, out, errOut := vetIn(t, root, "./m/naive", "./other")
	if code != exitFailure {
		t.Errorf("exit code %d, want %d; stderr: %s", code, exitFailure, errOut)
	}
	want := []string{
		"m/naive/naive.go:13 notimeout",
		"m/naive/naive.go:16 nojitter",
		"m/naive/naive.go:16 sleepctx",
		"other/naive.go:13 notimeout",
		"other/naive.go:16 nojitter",
		"other/naive.go:16 sleepctx",
	}
	if diff := cmp.Diff(want, checksOf(out)); diff != "" {
		t.Errorf("findings (-want +got):\n%s\nstderr: %s", diff, errOut)
	}
}

// TestVetLoadFailure runs vet on a package that does not type-check
// beside packages that do: the broken one is reported on standard error
// with its error, the others are still checked, and the exit code is
// never 0.
func TestVetLoadFailure(t *testing.T) {
	root := workspace(t, map[string]string{
		"m/naive/naive.go":   naiveSrc(t),
		"m/broken/broken.go": brokenSrc,
		"m/clean/clean.go":   cleanSrc,
	})
	for _, tc := range []struct {
		name, dir, pattern, prefix string
		wantErr                    string // besides the broken package's name
	}{
		{"with findings", root, "./m/...", "m/", "undefined: undefined"},
		{"inside", filepath.Join(root, "m"), "./...", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := vetIn(t, tc.dir, tc.pattern)
			if code != exitFailure {
				t.Errorf("exit code %d, want %d (findings)", code, exitFailure)
			}
			want := []string{
				tc.prefix + "naive/naive.go:13 notimeout",
				tc.prefix + "naive/naive.go:16 nojitter",
				tc.prefix + "naive/naive.go:16 sleepctx",
			}
			if diff := cmp.Diff(want, checksOf(out)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\nstderr: %s", diff, errOut)
			}
			if !strings.Contains(errOut, "could not check example.com/m/broken") || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr does not report the broken package and its error:\n%s", errOut)
			}
		})
	}
	t.Run("clean", func(t *testing.T) {
		code, out, errOut := vetIn(t, root, "./m/clean", "./m/broken")
		if code != exitNotChecked {
			t.Errorf("exit code %d, want %d (could not check); stderr: %s", code, exitNotChecked, errOut)
		}
		if out != "" {
			t.Errorf("stdout = %q, want nothing", out)
		}
		if !strings.Contains(errOut, "could not check example.com/m/broken") || strings.Contains(errOut, "m/clean") {
			t.Errorf("stderr should name the broken package only:\n%s", errOut)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errOut := vetIn(t, root, "--json", "./m/clean", "./m/broken")
		if code != exitNotChecked || out != "[]\n" {
			t.Errorf("exit code %d, stdout %q; want %d and []; stderr: %s", code, out, exitNotChecked, errOut)
		}
	})
	t.Run("no module", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "p", "p.go"), cleanSrc)
		code, _, errOut := vetIn(t, dir, "./p")
		if code != exitNotChecked {
			t.Errorf("exit code %d, want %d; stderr: %s", code, exitNotChecked, errOut)
		}
	})
	t.Run("matches nothing", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(root, "m", "empty"), 0o755); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := vetIn(t, root, "./m/empty/...")
		if code != exitNotChecked {
			t.Errorf("exit code %d, want %d; stderr: %s", code, exitNotChecked, errOut)
		}
	})
}
