package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/cmd/unherd/internal/param"
	"github.com/unherd/unherd/internal/golden"
	"github.com/unherd/unherd/sim"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scenario for tests: it squares 1..size.
type fake struct {
	name string
	err  error // returned by Run when set
}

type fakeParams struct{ size int }

func (p *fakeParams) Fields() []sim.Field {
	return []sim.Field{{Name: "size", Usage: "numbers to square", Value: &p.size}}
}

func (p *fakeParams) Validate() error {
	if p.size <= 0 {
		return fmt.Errorf("--size: %d must be above zero", p.size)
	}
	return nil
}

func (p *fakeParams) Quick() { p.size = 3 }

func (f fake) Name() string       { return f.name }
func (f fake) Describe() string   { return "Squares small numbers, for tests." }
func (f fake) Population() string { return "closed" }
func (f fake) Params() sim.Params { return &fakeParams{size: 4} }

func (f fake) Run(ctx context.Context, p sim.Params, o sim.Options) (*sim.Result, error) {
	if f.err != nil {
		return nil, f.err
	}
	fp := p.(*fakeParams)
	r := &sim.Result{Scenario: f.name, Population: "closed", Params: map[string]any{"size": fp.size}, Columns: []string{"n", "square"}}
	var xs, ys []float64
	for i := 1; i <= fp.size; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Rows = append(r.Rows, sim.Row{"n": i, "square": float64(i*i) + 0.5})
		xs, ys = append(xs, float64(i)), append(ys, float64(i*i))
		if o.Progress != nil {
			o.Progress(i, fp.size)
		}
	}
	r.Claims = []sim.Claim{{Source: "Arithmetic", Claim: "squares grow", Measured: fmt.Sprintf("%d rows", fp.size), Holds: true}}
	r.Charts = []sim.Chart{{Name: f.name + "_squares", Title: "Squares", XLabel: "n", YLabel: "n²",
		Series: []sim.Series{{Name: "square", X: xs, Y: ys}}}}
	return r, nil
}

// fakeEnv returns an env whose scenarios are fakes and whose what-if
// echoes the policy it was given.
func fakeEnv(stdout, stderr *bytes.Buffer, scenarios ...sim.Scenario) *env {
	e := newEnv(stdout, stderr)
	e.scenarios = func() []sim.Scenario { return scenarios }
	e.whatIf = func(_ context.Context, p sim.Policy, _ sim.Options) (*sim.WhatIfReport, error) {
		return &sim.WhatIfReport{Policy: p.Fields(), Default: sim.Policy{Name: "unherd default"}.Fields(),
			Capacity: 100, Outage: "30s", Overall: "worse",
			Comparisons: []sim.Comparison{{Population: "open", Judgement: "worse", Summary: "worse than the default: it said so",
				Yours: sim.Impact{MeanX: 2}, Default: sim.Impact{MeanX: 0.5}}},
			Results: []*sim.Result{{Scenario: "outage", Population: "closed", Columns: []string{"policy", "attempts"},
				Rows: []sim.Row{{"policy": p.Name, "attempts": p.Retry.MaxAttempts}}}},
			Margins: []sim.Margin{
				{Policy: p.Name, TipsAt: &sim.Trigger{Cut: 0.9, Length: 8 * time.Second}, Summary: "it tips at 90% for 8s"},
				{Policy: "unherd default", Summary: "it never tips"}}}, nil
	}
	e.now = func() time.Time { return time.Unix(0, 0) }
	return e
}

// runFake runs args against the fake scenarios.
func runFake(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb, fake{name: "fake"}, fake{name: "broken", err: errors.New("engine on fire")})
	code = runContext(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func TestExitCodesAndMessages(t *testing.T) {
	dir := t.TempDir()
	badPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("name: mine\nattempts: 4\nbase: 50ms\ncap: 2 seconds\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bigPolicy := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(bigPolicy, bytes.Repeat([]byte("# padding\n"), 200000), 0o644); err != nil {
		t.Fatal(err)
	}
	badJSON := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(badJSON, []byte("{\n  \"attempts\": 4,\n  \"jitter\": \"fuzzy\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	timeoutPolicy := filepath.Join(dir, "timeout.yaml")
	if err := os.WriteFile(timeoutPolicy, []byte("attempts: 3\ntimeouts:\n  attempt: 500ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stderr     []string // substrings stderr must hold
		stdoutSays string   // a substring stdout must hold; "" means stdout stays empty
	}{
		{"no arguments", nil, exitUsage, []string{"Usage:"}, ""},
		{"help", []string{"help"}, exitOK, nil, "Usage:"},
		{"-h", []string{"-h"}, exitOK, nil, "unherd report"},
		{"--help", []string{"--help"}, exitOK, nil, "fake"},
		{"unknown command", []string{"frob"}, exitUsage, []string{`unknown command "frob"`, "unherd help"}, ""},
		{"sim without name", []string{"sim"}, exitUsage, []string{"want a scenario name", "known: broken, fake"}, ""},
		{"sim flag before name", []string{"sim", "--json", "fake"}, exitUsage, []string{"want a scenario name"}, ""},
		{"sim help", []string{"sim", "-h"}, exitOK, nil, "broken, fake"},
		{"unknown scenario", []string{"sim", "nope"}, exitUsage, []string{`unknown scenario "nope"`, "known: broken, fake"}, ""},
		{"unknown flag", []string{"sim", "fake", "--bogus"}, exitUsage, []string{"-bogus", "unherd sim fake -h"}, ""},
		{"bad flag value", []string{"sim", "fake", "--size", "many"}, exitUsage, []string{`invalid value "many" for flag -size`}, ""},
		{"invalid parameter", []string{"sim", "fake", "--size", "0"}, exitUsage, []string{"--size: 0 must be above zero"}, ""},
		{"negative workers", []string{"sim", "fake", "--workers", "-2"}, exitUsage, []string{"-workers -2 is negative"}, ""},
		{"stray argument", []string{"sim", "fake", "extra"}, exitUsage, []string{`unexpected argument "extra"`}, ""},
		{"scenario help", []string{"sim", "fake", "-h"}, exitOK, nil, "-size"},
		{"scenario fails", []string{"sim", "broken"}, exitFailure, []string{"broken: engine on fire"}, ""},
		{"bad seed", []string{"sim", "fake", "--seed", "-1"}, exitUsage, []string{`"-1" is not a seed: want a whole number from 0 to 18446744073709551615`}, ""},
		{"report out is a file", []string{"report", "--out", "/dev/null"}, exitFailure, []string{"report: --out: /dev/null is not a directory"}, ""},
		{"report seeds", []string{"report", "--seeds", "0"}, exitUsage, []string{"--seeds 0 is outside 1 to 100"}, ""},
		{"sim seeds", []string{"sim", "fake", "--seeds", "101"}, exitUsage, []string{"sim fake: --seeds 101 is outside 1 to 100", "unherd sim fake -h"}, ""},
		{"whatif policy too large", []string{"whatif", "--policy", bigPolicy}, exitFailure, []string{"big.yaml is larger than 1024 KiB"}, ""},
		{"whatif policy is a directory", []string{"whatif", "--policy", dir}, exitFailure, []string{"is a directory, not a policy file"}, ""},
		{"whatif without policy", []string{"whatif"}, exitUsage, []string{"--policy FILE is required"}, ""},
		{"whatif missing file", []string{"whatif", "--policy", filepath.Join(dir, "none.yaml")}, exitFailure, []string{"none.yaml", "no such file"}, ""},
		{"whatif bad yaml", []string{"whatif", "--policy", badPolicy}, exitFailure, []string{badPolicy + `:4: cap: "2 seconds" is not a duration (want e.g. 2s)`}, ""},
		{"whatif bad json", []string{"whatif", "--policy", badJSON}, exitFailure, []string{badJSON + `:3: jitter: unknown jitter "fuzzy"`}, ""},
		{"whatif attempt timeout", []string{"whatif", "--policy", timeoutPolicy}, exitFailure, []string{timeoutPolicy + `:3: timeouts.attempt: the what-if cannot apply it`, "unherd sim metastable --policy FILE"}, ""},
		{"sim policy on a scenario without one", []string{"sim", "fake", "--policy", timeoutPolicy}, exitUsage, []string{"-policy"}, ""},
		{"report bad flag", []string{"report", "--outdir", dir}, exitUsage, []string{"-outdir"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runFake(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if tc.stdoutSays == "" && stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
			if !strings.Contains(stdout, tc.stdoutSays) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdoutSays, stdout)
			}
		})
	}
}

func TestSimJSON(t *testing.T) {
	code, stdout, stderr := runFake(t, "sim", "fake", "--size", "2", "--json", "--seed", "9")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var got struct {
		Scenario string           `json:"scenario"`
		Params   map[string]any   `json:"params"`
		Rows     []map[string]any `json:"rows"`
	}
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	want := []map[string]any{{"n": 1.0, "square": 1.5}, {"n": 2.0, "square": 4.5}}
	if got.Scenario != "fake" || got.Params["size"] != 2.0 || !cmp.Equal(want, got.Rows) {
		t.Fatalf("got %+v", got)
	}
}

func TestSimText(t *testing.T) {
	code, stdout, stderr := runFake(t, "sim", "fake", "--size", "3")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	checkGolden(t, "sim_fake.golden", stdout)
}

func TestWhatIfJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(path, []byte(`{"attempts": 4, "budget": {"kind": "ratio", "ratio": 0.2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runFake(t, "whatif", "--policy", path, "--json")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Policy      map[string]any   `json:"policy"`
		Overall     string           `json:"overall"`
		Comparisons []sim.Comparison `json:"verdicts"`
		Results     []sim.Result     `json:"results"`
		Margins     []map[string]any `json:"margins"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	wantMargins := []map[string]any{
		{"policy": "mine", "tips_at": map[string]any{"cut": 0.9, "length": "8s", "work_s": 7.2},
			"largest": map[string]any{"cut": 0.0, "length": "0s", "work_s": 0.0}, "summary": "it tips at 90% for 8s"},
		{"policy": "unherd default", "tips_at": nil,
			"largest": map[string]any{"cut": 0.0, "length": "0s", "work_s": 0.0}, "summary": "it never tips"},
	}
	if diff := cmp.Diff(wantMargins, got.Margins); diff != "" {
		t.Errorf("margins (-want +got):\n%s", diff)
	}
	wantPolicy := map[string]any{"name": "mine", "attempts": 4.0, "base": "50ms", "cap": "20s", "jitter": "full",
		"budget": map[string]any{"kind": "ratio", "ratio": 0.2}}
	if diff := cmp.Diff(wantPolicy, got.Policy); diff != "" {
		t.Fatalf("policy (-want +got):\n%s", diff)
	}
	// The printed policy reads back as a policy file: the same policy.
	again := filepath.Join(t.TempDir(), "mine.json")
	printed, _ := json.Marshal(got.Policy)
	if err := os.WriteFile(again, printed, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runFake(t, "whatif", "--policy", again, "--json")
	if code != exitOK || stderr != "" {
		t.Fatalf("the printed policy %s does not read back: exit %d, stderr %q", printed, code, stderr)
	}
	var back struct {
		Policy map[string]any `json:"policy"`
	}
	if err := json.Unmarshal([]byte(stdout), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Policy, back.Policy); diff != "" {
		t.Fatalf("policy read back (-printed +read):\n%s", diff)
	}
	if len(got.Results) != 1 || got.Results[0].Rows[0]["attempts"] != 4.0 {
		t.Fatalf("results %+v", got.Results)
	}
	if got.Overall != "worse" || len(got.Comparisons) != 1 || got.Comparisons[0].Summary != "worse than the default: it said so" {
		t.Fatalf("verdicts %+v, overall %q", got.Comparisons, got.Overall)
	}
}

// --policy - reads the policy from standard input; its errors name stdin.
func TestWhatIfStdin(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		code        int
		want        string
	}{
		{"valid", "attempts: 5\njitter: none\n", exitOK, "5 attempts"},
		{"invalid", "attempts: 5\njitter: fuzzy\n", exitFailure, `stdin:2: jitter: unknown jitter "fuzzy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := fakeEnv(&out, &errb)
			e.stdin = strings.NewReader(tc.input)
			code := runContext(context.Background(), e, []string{"whatif", "--policy", "-"})
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.code, tc.want, out.String(), errb.String())
			}
		})
	}
}

func TestWhatIfText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte("attempts: 2\njitter: none\nbudget: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runFake(t, "whatif", "--policy", path)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"Your policy (mine, from " + path + "): 2 attempts, no jitter from 50ms capped at 20s, no budget",
		"Default (unherd default): 3 attempts, full jitter from 50ms capped at 20s, a token-bucket budget",
		"Verdict: worse than the default",
		"open    worse than the default: it said so",
		"mean load during the outage / capacity",
		"== outage",
		"Margin against a metastable failure",
		"  yours    it tips at 90% for 8s\n  default  it never tips\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb, fake{name: "fake"}, fake{name: "other"})
	if code := runContext(context.Background(), e, []string{"report", "--out", dir, "--seed", "3"}); code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	for _, want := range []string{"report.md", "fake.csv", "other.csv", "fake_squares.png", "fake_squares.svg", "other_squares.png"} {
		if st, err := os.Stat(filepath.Join(dir, want)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", want, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seed 3", "## fake", "| n | square |", "![Squares](fake_squares.png)", "`size` | `3`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, want := range []string{"== fake (closed)", "Claims:", "Total wall time: 0s for 2 scenarios."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// --cpuprofile writes a pprof CPU profile (gzip-compressed protocol
// buffers) of the run; a path that cannot be created fails before anything
// runs.
func TestReportCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	code, _, stderr := runFake(t, "report", "--out", dir, "--cpuprofile", prof)
	if code != exitFailure || !strings.Contains(stderr, "1 of 2 scenarios failed: broken") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile %s: %v, %d bytes, want a gzip stream", prof, err, len(b))
	}
	code, stdout, stderr := runFake(t, "report", "--out", dir, "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.pprof"))
	if code != exitFailure || !strings.Contains(stderr, "report: --cpuprofile: open ") || strings.Contains(stdout, "== fake") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestReportScenarioFails(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runFake(t, "report", "--out", dir)
	if code != exitFailure || !strings.Contains(stderr, "1 of 2 scenarios failed: broken") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// The scenarios that ran still make a report.
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "**This scenario failed:** broken: seed 1: engine on fire") {
		t.Fatalf("report.md: %v\n%s", err, md)
	}
	if !strings.Contains(stdout, "== fake") {
		t.Fatalf("stdout lacks the fake scenario:\n%s", stdout)
	}
}

func TestReportNoScenarios(t *testing.T) {
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb)
	if code := runContext(context.Background(), e, []string{"report", "--out", t.TempDir()}); code != exitFailure {
		t.Fatalf("exit %d", code)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb, fake{name: "fake"})
	if code := runContext(ctx, e, []string{"sim", "fake"}); code != exitInterrupted || errb.String() != "unherd: interrupted\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// clash is a scenario whose parameters take a flag name unherd sim uses.
type clash struct{ fake }

type clashParams struct{ fakeParams }

func (p *clashParams) Fields() []sim.Field {
	return []sim.Field{{Name: "json", Usage: "clash", Value: &p.size}}
}
func (clash) Params() sim.Params { return &clashParams{} }

func TestFlagClash(t *testing.T) {
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb, clash{fake{name: "clash"}})
	if code := runContext(context.Background(), e, []string{"sim", "clash"}); code != exitFailure || !strings.Contains(errb.String(), "defines flag -json") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestRegisteredScenarios runs every scenario sim registers through the
// real command, at sizes chosen for speed.
func TestRegisteredScenarios(t *testing.T) {
	if len(sim.Scenarios()) == 0 {
		t.Skip("sim registers no scenarios")
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, s := range sim.Scenarios() {
		if !strings.Contains(out.String(), s.Name()) {
			t.Errorf("help does not list %s", s.Name())
		}
	}
	if _, ok := sim.Lookup("jitter"); ok {
		out.Reset()
		code := run([]string{"sim", "jitter", "--clients", "10,20", "--runs", "2", "--json"}, &out, &errb)
		if code != exitOK {
			t.Fatalf("sim jitter: exit %d, stderr %s", code, errb.String())
		}
		var got struct {
			Scenario string           `json:"scenario"`
			Params   map[string]any   `json:"params"`
			Rows     []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out.String())
		}
		if got.Scenario != "jitter" || got.Params == nil || len(got.Rows) == 0 {
			t.Fatalf("got %+v", got)
		}
		for _, k := range []string{"strategy", "clients", "calls", "time_ms"} {
			if _, ok := got.Rows[0][k]; !ok {
				t.Errorf("jitter row lacks %q: %v", k, got.Rows[0])
			}
		}
	}
	// The report's sizes target a normal build; under the race detector
	// the whole report takes about a minute, so it runs only without it
	// (go test ./cmd/unherd). TestReport covers the same code with fakes.
	if testing.Short() || raceEnabled {
		t.Log("skipping the full report: -short or -race")
		return
	}
	dir := t.TempDir()
	out.Reset()
	if code := run([]string{"report", "--out", dir}, &out, &errb); code != exitOK {
		t.Fatalf("report: exit %d, stderr %s", code, errb.String())
	}
	for _, ext := range []string{"md", "png", "svg", "csv"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*."+ext)); len(m) == 0 {
			t.Errorf("report wrote no .%s file", ext)
		}
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	want := golden.Want(t, path, []byte(got))
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc ddd", 7, "  ")
	if want := "aaa bbb\n  ccc ddd"; got != want {
		t.Fatalf("wrap = %q, want %q", got, want)
	}
}

// A parameter error reads as the command line's own, without the sim
// package's prefix.
func TestParamErrorDoesNotStutter(t *testing.T) {
	if _, ok := sim.Lookup("jitter"); !ok {
		t.Skip("no jitter scenario")
	}
	var out, errb bytes.Buffer
	code := run([]string{"sim", "jitter", "--runs", "0"}, &out, &errb)
	want := "unherd: sim jitter: --runs: 0 must be above zero\n"
	if code != exitUsage || !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q, want it to start with %q", code, errb.String(), want)
	}
}

// TestSumProgress: the report's meter shows the scenarios' mean progress,
// each scenario counting alike whatever its number of runs, and names the
// scenarios still running.
func TestSumProgress(t *testing.T) {
	var done, total int
	progress, detail := sumProgress(func(d, t int) { done, total = d, t }, []string{"jitter", "hedge", "outage"})
	progress(0)(5, 10)
	progress(1)(1000, 1000)
	if done != 150 || total != 300 {
		t.Errorf("after half of one task and all of another of three: %d/%d, want 150/300", done, total)
	}
	if got, want := detail(), "jitter 50%, outage 0%"; got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
	progress(2)(1, 1)
	progress(0)(10, 10)
	if done != total {
		t.Errorf("all tasks done: %d/%d, want done == total", done, total)
	}
	if got := detail(); got != "" {
		t.Errorf("detail %q once every task is done, want none", got)
	}
}

// Tasks reporting at once never make the sum go back, and the last sum
// update hears is every task done.
func TestSumProgressConcurrent(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	var got []int // only update appends, and it is called one at a time
	progress, _ := sumProgress(func(d, _ int) { got = append(got, d) }, names)
	var wg sync.WaitGroup
	for i := range names {
		wg.Go(func() {
			for d := 1; d <= 200; d++ {
				progress(i)(d, 200)
			}
		})
	}
	wg.Wait()
	for k := 1; k < len(got); k++ {
		if got[k] < got[k-1] {
			t.Fatalf("progress went back from %d to %d", got[k-1], got[k])
		}
	}
	if len(got) == 0 || got[len(got)-1] != 100*len(names) {
		t.Fatalf("last sum %v, want %d", got[len(got)-1:], 100*len(names))
	}
}

// TestScenarioFlags checks a scenario's parameters as flags: the default
// shown is the current value, Parse sets the set's fields, and a list
// that does not parse names its flag.
func TestScenarioFlags(t *testing.T) {
	for _, c := range []struct {
		scenario string
		args     []string
		check    func(p sim.Params) string
	}{
		{"jitter", []string{"-clients", "10, 30,50", "-runs", "7", "-hop", "5ms"}, func(p sim.Params) string {
			v := values(p)
			if fmt.Sprintf("%v %v %v", v["clients"], v["runs"], v["hop"]) != "[10 30 50] 7 5ms" {
				return fmt.Sprint(v)
			}
			return ""
		}},
		{"storm", []string{"--attempts", "2, 4", "--ratio", "0.25"}, func(p sim.Params) string {
			v := values(p)
			if fmt.Sprintf("%v %v", v["attempts"], v["ratio"]) != "[2 4] 0.25" {
				return fmt.Sprint(v)
			}
			return ""
		}},
	} {
		s, ok := sim.Lookup(c.scenario)
		if !ok {
			t.Fatalf("no scenario %q", c.scenario)
		}
		p := s.Params()
		fs := flag.NewFlagSet(c.scenario, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		for _, f := range p.Fields() {
			fs.Var(param.Flag(f), f.Name, f.Usage)
			if got, want := fs.Lookup(f.Name).DefValue, fmt.Sprint(values(p)[f.Name]); strings.Trim(strings.ReplaceAll(want, " ", ","), "[]") != got {
				t.Errorf("%s --%s: default shown as %q, want %q", c.scenario, f.Name, got, want)
			}
		}
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%s %v: %v", c.scenario, c.args, err)
		}
		if bad := c.check(p); bad != "" {
			t.Errorf("%s %v: values %s", c.scenario, c.args, bad)
		}
		if c.scenario == "storm" {
			if err := fs.Parse([]string{"--attempts", "two"}); err == nil || !strings.Contains(err.Error(), "--attempts") {
				t.Errorf("--attempts two: error %v, want one naming --attempts", err)
			}
		}
	}
}

// The package doc's usage block names every command, with the synopsis
// the help prints, and nothing else.
func TestDocListsCommands(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, line := range strings.Split(string(src), "\n") {
		if u, ok := strings.CutPrefix(line, "//\tunherd "); ok {
			doc = append(doc, u)
		}
		if strings.HasPrefix(line, "package ") {
			break
		}
	}
	want := []string{"help", "--version"}
	for _, c := range commands {
		want = append(want, c.synopsis)
	}
	slices.Sort(doc)
	slices.Sort(want)
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("the package doc's usage lines differ from the commands' synopses (-commands +doc):\n%s", diff)
	}
}

// TestSimMetastable runs the scenario the report does not run yet through
// the real command, at a tenth of its rate with service times ten times
// as long (the same capacity over load), and compares its table and
// claims with a golden file; go test -update rewrites it.
func TestSimMetastable(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"sim", "metastable", "--rate", "830", "--service", "10ms", "--after", "30s",
		"--map-cuts", "70,90", "--map-lengths", "4,8,16", "--quiet"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("sim metastable: exit %d, stderr %s", code, errb.String())
	}
	checkGolden(t, "sim_metastable.golden", out.String())
	out.Reset()
	if code := run([]string{"help"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "metastable") {
		t.Errorf("help: exit %d, does not list metastable:\n%s", code, out.String())
	}
}

// values returns p's parameters by name, each the value its Field points
// at.
func values(p sim.Params) map[string]any {
	m := map[string]any{}
	for _, f := range p.Fields() {
		m[f.Name] = reflect.ValueOf(f.Value).Elem().Interface()
	}
	return m
}
