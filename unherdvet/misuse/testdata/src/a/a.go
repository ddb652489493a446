package a

import (
	"context"
	"net/http"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

func call(ctx context.Context) error { return nil }

// Positive: no jitter, no delay, no budget.
var lockstep = retry.Config{Backoff: backoff.Schedule{Jitter: backoff.None}} // want `misuse: backoff.Schedule without jitter \(backoff.None\) outside tests`

var immediate = backoff.Schedule{Immediate: true} // want `backoff.Schedule with Immediate outside tests`

var unlimited = retry.Config{Budget: budget.Unlimited} // want `retry budget turned off \(budget.Unlimited\)`

func assigned(cfg *retry.Config) {
	cfg.Backoff.Jitter = backoff.None // want `without jitter`
}

// Positive: a Policy built and used per call.
func perCall(ctx context.Context) error {
	return retry.Default().Do(ctx, call) // want `retry.Default builds a Policy, with a full retry budget, on every call`
}

func perCallNew(ctx context.Context) (int, error) {
	p, err := retry.New(retry.Config{MaxAttempts: 5}) // want `retry.New builds a Policy`
	if err != nil {
		return 0, err
	}
	return retry.DoValue(ctx, p, func(ctx context.Context) (int, error) { return 1, call(ctx) })
}

// Positive: built in a loop, used once per iteration.
func inLoop(ctx context.Context, jobs []string) {
	for range jobs {
		p := retry.Default() // want `retry.Default inside a loop builds new retry state`
		_ = p.Do(ctx, call)
	}
}

// Positive: a budget and a transport built per request.
func handler(w http.ResponseWriter, r *http.Request) {
	b, _ := budget.NewTokenBucket(budget.TokenBucketConfig{})  // want `budget.NewTokenBucket inside an HTTP handler`
	tr, _ := unherdhttp.NewTransport(nil, unherdhttp.Config{}) // want `unherdhttp.NewTransport inside an HTTP handler`
	c := &http.Client{Transport: tr}
	if b.Withdraw() {
		c.Get("http://backend/")
	}
}

// Negative: built once, shared.
var policy = retry.Default()

func shared(ctx context.Context) error { return policy.Do(ctx, call) }

type client struct{ p *retry.Policy }

func newClient() (*client, error) {
	p, err := retry.New(retry.Config{})
	if err != nil {
		return nil, err
	}
	return &client{p: p}, nil
}

// Negative: one per dependency, kept.
func perDependency(deps []string) []*retry.Policy {
	var ps []*retry.Policy
	for range deps {
		b, _ := budget.NewRatio(budget.RatioConfig{Ratio: 0.1})
		p, _ := retry.New(retry.Config{Budget: b})
		ps = append(ps, p)
	}
	return ps
}

// Negative: main runs once.
func main() {
	_ = retry.Default().Do(context.Background(), call)
}

// Negative: comparisons and the default jitter.
func inspect(s backoff.Schedule, b budget.Budget) bool {
	switch s.Jitter {
	case backoff.None:
		return true
	}
	return s.Jitter == backoff.None || b == budget.Unlimited
}

var full = backoff.Schedule{Jitter: backoff.Full}

// Silenced.
var demo = backoff.Schedule{Jitter: backoff.None} //unherdvet:ignore misuse shows what no jitter does
