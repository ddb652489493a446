//go:build !race

// The what-if at its published size takes a few seconds on two cores and
// ten times that under the race detector; TestJudgeCountsNoCalls checks
// the same rule on the figures alone in race-enabled runs.

package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/retry"
)

// TestWhatIfNotGamedByCalls is the example of the issue that brought
// goodput into the verdicts: five attempts without jitter or budget get
// 96.8% of the closed population's calls through against the default's
// 78.2%, only because the default's clients, refused fast, make more
// calls during the outage. Both serve the callers as much: successful
// calls per second are the same, so the policy is not better.
func TestWhatIfNotGamedByCalls(t *testing.T) {
	p := Policy{Name: "p5", Retry: retry.Config{MaxAttempts: 5, Backoff: backoff.Schedule{Jitter: backoff.None}}, Budget: "none"}
	rep, err := WhatIf(context.Background(), p, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed := rep.Comparisons[0]
	if closed.Population != "closed" {
		t.Fatalf("first verdict is %q's", closed.Population)
	}
	if closed.Judgement == "better" {
		t.Errorf("closed: judged better: %s", closed.Summary)
	}
	if strings.Contains(closed.Summary, "of calls succeed") {
		t.Errorf("closed: the summary judges by a share of calls: %s", closed.Summary)
	}
	if d := closed.Yours.GoodputPct - closed.Default.GoodputPct; d > 2 || d < -2 {
		t.Errorf("closed: goodput %.1f%% vs the default's %.1f%%, want within 2 points", closed.Yours.GoodputPct, closed.Default.GoodputPct)
	}
	if rep.Overall != "worse" {
		t.Errorf("overall %q, want worse (the open stream's load)", rep.Overall)
	}
}
