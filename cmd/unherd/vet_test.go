package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The vet tests load the packages under testdata/vet: a retry loop with a
// constant delay and a sleep that ignores its context, and a polling loop
// that is clean.

func TestVetFindings(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"vet", "./testdata/vet/storm"}, &out, &errOut)
	if code != exitFailure {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, exitFailure, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"testdata/vet/storm/storm.go:22: nojitter: retry loop waits a constant 1s between attempts",
		"testdata/vet/storm/storm.go:22: sleepctx: retry loop waits with time.Sleep although ctx is in scope",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if !strings.Contains(errOut.String(), "2 findings") {
		t.Errorf("stderr = %q, want the count of findings", errOut.String())
	}
}

func TestVetJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"vet", "./testdata/vet/storm", "--json"}, &out, &errOut)
	if code != exitFailure {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, exitFailure, errOut.String())
	}
	type finding struct {
		File   string `json:"file"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Check  string `json:"check"`
	}
	var got []finding
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	want := []finding{
		{"testdata/vet/storm/storm.go", 22, 3, "nojitter"},
		{"testdata/vet/storm/storm.go", 22, 3, "sleepctx"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestVetClean(t *testing.T) {
	for _, args := range [][]string{
		{"vet", "./testdata/vet/clean"},
		{"vet", "--json", "./testdata/vet/clean"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != exitOK {
			t.Fatalf("%v: exit code %d, want 0; stderr: %s", args, code, errOut.String())
		}
		want := ""
		if args[1] == "--json" {
			want = "[]\n"
		}
		if out.String() != want {
			t.Errorf("%v: stdout = %q, want %q", args, out.String(), want)
		}
	}
}

func TestVetUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"unknown flag", []string{"vet", "--bogus"}, exitUsage},
		{"help", []string{"vet", "-h"}, exitOK},
		{"no such package", []string{"vet", "./testdata/vet/missing"}, exitNotChecked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
		})
	}
}

// TestVetReadme runs the README's before and after: the hand-written loop
// has three findings, the same call through unherdhttp none.
func TestVetReadme(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"vet", "./testdata/vet/before"}, &out, &errOut); code != exitFailure {
		t.Fatalf("before: exit code %d, want %d; stderr: %s", code, exitFailure, errOut.String())
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		file, rest, _ := strings.Cut(line, ": ")
		check, _, _ := strings.Cut(rest, ":")
		got = append(got, file+" "+check)
	}
	want := []string{
		"testdata/vet/before/fetch.go:13 notimeout",
		"testdata/vet/before/fetch.go:16 nojitter",
		"testdata/vet/before/fetch.go:16 sleepctx",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("before (-want +got):\n%s\n%s", diff, out.String())
	}
	out.Reset()
	if code := run([]string{"vet", "./testdata/vet/after"}, &out, &errOut); code != exitOK || out.Len() != 0 {
		t.Errorf("after: exit code %d, output %q; want 0 and nothing", code, out.String())
	}
}
