package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// results is TestOverload's JSON for two protections, made up.
const results = `{"scale": "full", "seed": 1, "workers": 8, "phase_seconds": 8, "capacity": 353, "timeout_s": 1,
"rows": [
 {"protection": "none", "phases": [{"phase": "0.5x", "offered": 0.5, "goodput": 0.49}, {"phase": "2x", "offered": 2, "goodput": 0.7}, {"phase": "4x", "offered": 4, "goodput": 0}, {"phase": "0.5x after", "offered": 0.5, "goodput": 0}]},
 {"protection": "unherdhttp.Shed", "judged": true, "phases": [{"phase": "0.5x", "offered": 0.5, "goodput": 0.49}, {"phase": "2x", "offered": 2, "goodput": 0.95}, {"phase": "4x", "offered": 4, "goodput": 0.97}, {"phase": "0.5x after", "offered": 0.5, "goodput": 0.5}]}
]}`

func parse(t *testing.T, s string) run {
	t.Helper()
	var r run
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWrite(t *testing.T) {
	r := parse(t, results)
	for _, tc := range []struct {
		format, prefix string
	}{
		{"png", "\x89PNG"},
		{"svg", "<?xml"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b, r, tc.format); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(b.String(), tc.prefix) {
				t.Errorf("%s chart starts with %q, want %q", tc.format, b.String()[:min(b.Len(), 8)], tc.prefix)
			}
		})
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"no rows", `{"rows": []}`, "no results"},
		{"harness failed", strings.Replace(results, `"judged": true,`, `"judged": true, "harness_failed": "at 4x the callers started late",`, 1), "could not run the harness"},
		{"phases differ", strings.Replace(results, `{"phase": "0.5x after", "offered": 0.5, "goodput": 0}`, ``, 1), "phases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parse(t, strings.Replace(tc.json, `}, ]`, `}]`, 1))
			_, err := build(r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("build: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
