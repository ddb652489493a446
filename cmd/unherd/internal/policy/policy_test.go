package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim"
)

func TestParse(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		file string
		data string
		want sim.Policy
	}{
		{
			name: "full yaml",
			file: "policy.yaml",
			data: `
name: checkout
attempts: 4
base: 50ms
cap: 2s
jitter: decorrelated
budget: token
`,
			want: sim.Policy{Name: "checkout", Retry: retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Base: 50 * ms, Cap: 2 * time.Second, Jitter: backoff.Decorrelated}}, Budget: "token"},
		},
		{
			name: "full json",
			file: "p.json",
			data: `{"name": "checkout", "attempts": 4, "base": "50ms", "cap": "2s", "jitter": "none",
 "budget": {"kind": "ratio", "ratio": 0.2}}`,
			want: sim.Policy{Name: "checkout", Retry: retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Base: 50 * ms, Cap: 2 * time.Second, Jitter: backoff.None}}, Budget: "ratio", BudgetRatio: 0.2},
		},
		{
			name: "empty mapping takes defaults and the file name",
			file: "dir/mine.yml",
			data: "{}\n",
			want: sim.Policy{Name: "mine"},
		},
		{
			name: "sniffed json without extension",
			file: "policy",
			data: "\n  {\"jitter\": \"equal\"}",
			want: sim.Policy{Name: "policy", Retry: retry.Config{Backoff: backoff.Schedule{Jitter: backoff.Equal}}},
		},
		{
			name: "sniffed yaml without extension",
			file: "policy.txt",
			data: "jitter: equal\nbudget: none\n",
			want: sim.Policy{Name: "policy", Retry: retry.Config{Backoff: backoff.Schedule{Jitter: backoff.Equal}}, Budget: "none"},
		},
		{
			name: "ratio alone is the ratio budget",
			file: "p.yaml",
			data: "budget:\n  ratio: 0.5\n",
			want: sim.Policy{Name: "p", Budget: "ratio", BudgetRatio: 0.5},
		},
		{
			name: "attempt timeout and no retries",
			file: "p.yaml",
			data: "attempts: 1\ntimeouts:\n  attempt: 500ms\n",
			want: sim.Policy{Name: "p", Retry: retry.Config{MaxAttempts: 1, AttemptTimeout: 500 * ms}},
		},
		{
			name: "zero attempts is the default",
			file: "p.yaml",
			data: "attempts: 0\n",
			want: sim.Policy{Name: "p"},
		},
		{
			name: "ratio budget without ratio",
			file: "p.yaml",
			data: "budget:\n  kind: ratio\n",
			want: sim.Policy{Name: "p", Budget: "ratio"},
		},
		{
			name: "yaml comments and anchors",
			file: "p.yaml",
			data: "# mine\nbase: &b 100ms # first\ncap: *b\n",
			want: sim.Policy{Name: "p", Retry: retry.Config{Backoff: backoff.Schedule{Base: 100 * ms, Cap: 100 * ms}}},
		},
		{
			name: "small cap and default base",
			file: "p.yaml",
			data: "cap: 10ms\n",
			want: sim.Policy{Name: "p", Retry: retry.Config{Backoff: backoff.Schedule{Cap: 10 * ms}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.file, []byte(tc.data))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		data string
		want string // the whole message
	}{
		{"bad duration", "policy.yaml", "attempts: 3\nbase: 50ms\njitter: full\ncap: 2 seconds\n",
			`policy.yaml:4: cap: "2 seconds" is not a duration (want e.g. 2s)`},
		{"number as duration", "p.yaml", "base: 50\n",
			`p.yaml:1: base: the number 50 is not a duration (want e.g. 50ms)`},
		{"negative duration", "p.yaml", "\n\nbase: -5ms\n",
			`p.yaml:3: base: -5ms must be positive (want e.g. 50ms; omit the field for the default)`},
		{"unknown field", "p.yaml", "attempts: 3\nretries: 4\n",
			`p.yaml:2: retries: unknown field (known: name, attempts, base, cap, jitter, budget, timeouts)`},
		{"duplicate field", "p.yaml", "cap: 1s\nbase: 5ms\ncap: 2s\n",
			`p.yaml:3: cap: set twice (first on line 1)`},
		{"attempts negative", "p.yaml", "attempts: -1\n",
			`p.yaml:1: attempts: MaxAttempts -1 is negative; use 1 to disable retries or 0 for the default of 3`},
		{"attempts above the limit", "p.yaml", "name: x\nattempts: 101\n",
			`p.yaml:2: attempts: 101 is above the limit of 100`},
		{"attempt timeout negative", "p.yaml", "attempts: 3\ntimeouts:\n  attempt: -1s\n",
			`p.yaml:3: timeouts.attempt: -1s must be positive (want e.g. 500ms; omit the field for the default)`},
		{"attempts fractional", "p.json", "{\n \"attempts\": 2.5\n}",
			`p.json:2: attempts: 2.5 is not a whole number from 1 to 100 (it counts the first attempt: 3 means 2 retries; 0 is the default, 3)`},
		{"attempts string", "p.json", "{\"attempts\": \"3\"}",
			`p.json:1: attempts: want a whole number from 1 to 100 (0 for the default, 3), got "3"`},
		{"unknown jitter", "p.yaml", "jitter: fuzzy\n",
			`p.yaml:1: jitter: unknown jitter "fuzzy" (want none, full, equal or decorrelated)`},
		{"jitter not a string", "p.yaml", "jitter: [full]\n",
			`p.yaml:1: jitter: want none, full, equal or decorrelated; got a list`},
		{"unknown budget", "p.yaml", "budget: infinite\n",
			`p.yaml:1: budget: want one of none, token, ratio; got "infinite"`},
		{"ratio on token", "p.yaml", "budget:\n  kind: token\n  ratio: 0.1\n",
			`p.yaml:3: budget.ratio: applies only to kind ratio, not token`},
		{"ratio out of range", "p.yaml", "budget:\n  kind: ratio\n  ratio: 1.5\n",
			`p.yaml:3: budget.ratio: want a share of requests above 0 and at most 1, e.g. 0.1; got 1.5`},
		{"budget kind missing", "p.yaml", "budget: {}\n",
			`p.yaml:1: budget.kind: missing (want one of none, token, ratio, or a ratio alone for the ratio budget)`},
		{"unknown budget field", "p.yaml", "budget:\n  kind: ratio\n  window: 10s\n",
			`p.yaml:3: budget.window: unknown field (known: kind, ratio)`},
		{"timeouts scalar", "p.yaml", "timeouts: 1s\n",
			`p.yaml:1: timeouts: want a mapping such as {attempt: 500ms}; got "1s"`},
		{"unknown timeout", "p.json", "{\"timeouts\": {\n\"attempt\": \"1s\",\n\"total\": \"5s\"}}",
			`p.json:3: timeouts.total: unknown field (known: attempt)`},
		{"base above cap", "p.yaml", "cap: 1s\nbase: 2s\n",
			`p.yaml:2: base: Base 2s is above Cap 1s`},
		{"base above default cap", "p.yaml", "base: 1m\n",
			`p.yaml:1: base: Base 1m0s is above Cap 20s`},
		{"null value", "p.yaml", "cap:\n",
			`p.yaml:1: cap: no value is not a duration (want e.g. 2s)`},
		{"empty name", "p.yaml", "name: ' '\n",
			`p.yaml:1: name: is empty`},
		{"empty file", "p.yaml", "",
			`p.yaml:1: the file is empty; want a mapping with some of: name, attempts, base, cap, jitter, budget, timeouts`},
		{"empty json", "p.json", "  \n",
			`p.json:1: the file is empty; want a mapping with some of: name, attempts, base, cap, jitter, budget, timeouts`},
		{"not a mapping", "p.yaml", "- 1\n- 2\n",
			`p.yaml:1: want a mapping with some of: name, attempts, base, cap, jitter, budget, timeouts; got a list`},
		{"yaml syntax", "p.yaml", "base: 50ms\ncap: [1s\n",
			`p.yaml:2: did not find expected ',' or ']'`},
		{"yaml parser error on first line", "p.yaml", "cap: [\n", `p.yaml:2: did not find expected node content`},
		{"yaml bad indent", "p.yaml", "base: 5ms\ncap: 1s\n  jitter: full\n", `p.yaml:3: mapping values are not allowed in this context`},
		{"yaml block mapping", "p.yaml", "base: 5ms\ntimeouts:\n  attempt: 1s\n x: 1\n", `p.yaml:4: did not find expected key`},
		{"yaml tab indent", "p.yaml", "timeouts:\n\tattempt: 1s\n",
			`p.yaml:2: found character that cannot start any token`},
		{"control character", "p.yaml", "base: 5ms\ncap: 1\x01s\n",
			`p.yaml:2: control character U+0001 is not allowed`},
		{"invalid utf-8", "p.json", "{\n\n\"name\": \"\xff\"}",
			`p.json:3: invalid UTF-8`},
		{"json syntax", "p.json", "{\n  \"base\": \"5ms\",\n  \"cap\": \"1s\",\n}\n",
			`p.json:4: invalid character '}' looking for beginning of object key string`},
		{"json truncated", "p.json", "{\n  \"base\": \"5ms\",\n",
			`p.json:3: unexpected end of JSON input`},
		{"json trailing data", "p.json", "{}\n{}\n",
			`p.json:2: unexpected data after the policy object`},
		{"json type", "p.json", "{\"cap\": true}",
			`p.json:1: cap: the boolean true is not a duration (want e.g. 2s)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file, []byte(tc.data))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); got != tc.want {
				t.Fatalf("error\n got: %s\nwant: %s", got, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 {x: 1, y: 1}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {x: *a%d, y: *a%d}\n", i, i, i-1, i-1)
	}
	_, err := Parse("p.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 10000 values") {
		t.Fatalf("error %v, want the value limit", err)
	}
}

func TestNesting(t *testing.T) {
	for _, tc := range []struct{ file, data string }{
		{"p.json", `{"timeouts": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`},
		{"p.yaml", "timeouts: " + strings.Repeat("[", 100) + strings.Repeat("]", 100)},
	} {
		_, err := Parse(tc.file, []byte(tc.data))
		var e *Error
		if !errors.As(err, &e) || e.Line != 1 {
			t.Fatalf("%s: error %v, want a line-1 *Error", tc.file, err)
		}
	}
}

// FuzzParsePolicy checks that Parse never panics and that every error
// locates itself: a line always, formatted into the message.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"attempts: 3\nbase: 50ms\ncap: 2s\njitter: full\nbudget: token\ntimeouts:\n  attempt: 1s\n",
		`{"attempts": 3, "base": "50ms", "budget": {"kind": "ratio", "ratio": 0.1}}`,
		"cap: 2 seconds\n",
		"budget:\n  kind: ratio\n  ratio: 2\n",
		"{\"a\": [1, {\"b\": null}]}",
		"&a [*a]",
		"",
		"- x",
		"{",
	} {
		f.Add("policy.yaml", []byte(s))
		f.Add("policy.json", []byte(s))
		f.Add("policy", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		p, err := Parse(name, data)
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("accepted a policy the simulator refuses: %v", verr)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %T %v is not *Error", err, err)
		}
		if e.Line < 1 || e.Msg == "" {
			t.Fatalf("error %+v has no line or message", e)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: ", name, e.Line)) && name != "" {
			t.Fatalf("message %q does not locate the problem", err)
		}
	})
}
