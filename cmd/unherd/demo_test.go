package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The demo over the memory store charges each payment once with keys and
// some more than once without, and the same seed gives the same counts.
func TestDemoPayments(t *testing.T) {
	var outs []string
	for range 2 {
		var out, errb bytes.Buffer
		if code := run([]string{"demo", "payments", "--payments", "200", "--drop", "0.2", "--seed", "7"}, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		outs = append(outs, out.String())
	}
	m := regexp.MustCompile(`(?m)^200 payments: ([0-9,]+) charges without keys, ([0-9,]+) with$`).FindStringSubmatch(outs[0])
	if m == nil {
		t.Fatalf("no summary line in:\n%s", outs[0])
	}
	without, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if without <= 200 || m[2] != "200" {
		t.Errorf("%s charges without keys and %s with, want more than 200 and exactly 200", m[1], m[2])
	}
	if !strings.Contains(outs[0], "0 payments charged more than once, 0 not at all") {
		t.Errorf("the run with keys charged a payment other than once:\n%s", outs[0])
	}
	strip := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	if a, b := strip.ReplaceAllString(outs[0], ""), strip.ReplaceAllString(outs[1], ""); a != b {
		t.Errorf("seed 7 twice gave different output:\n%s\n%s", a, b)
	}
}

func TestDemoUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo"},
		{"demo", "other"},
		{"demo", "payments", "--payments", "0"},
		{"demo", "payments", "--drop", "0.9"},
		{"demo", "payments", "--redis", "10.0.0.1:6379", "--postgres", "postgres://x"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "payments", "--redis", "10.0.0.1:6379"}, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "loopback") {
		t.Errorf("a Redis off loopback: exit %d, %q; want a refusal", code, errb.String())
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1083: "1,083", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestDemoAccountsForDrops: every dropped response is a payment sent
// again or one left without an answer, and the output says which.
func TestDemoAccountsForDrops(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "payments", "--payments", "200", "--drop", "0.3", "--seed", "3"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	re := regexp.MustCompile(`(?m)^  with.*: ([0-9,]+) requests served, ([0-9,]+) responses dropped \(([0-9,]+) sent again by the caller, ([0-9,]+) retried by the Transport, ([0-9,]+) payments left without an answer after 10 sends\)`)
	ms := re.FindAllStringSubmatch(out.String(), -1)
	if len(ms) != 2 {
		t.Fatalf("want two runs' accounts of the drops in:\n%s", out.String())
	}
	num := func(s string) int { n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", "")); return n }
	for _, m := range ms {
		served, dropped, resent, retried, unanswered := num(m[1]), num(m[2]), num(m[3]), num(m[4]), num(m[5])
		if dropped != resent+retried+unanswered || served != 200+resent+retried {
			t.Errorf("%q: %d dropped is not %d sent again + %d retried + %d unanswered, or %d served is not 200 + the resends", m[0], dropped, resent, retried, unanswered, served)
		}
	}
}
