package chaos_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/chaos"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// A brown-out between an unherd Transport and a real server: the chaos
// transport answers 503 to half of the requests before they leave, and
// five attempts absorb nearly all of it (one call in 32 gets five 503s in
// a row; here, one of 20).
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	inj, err := chaos.New(chaos.Config{Seed: 1, Faults: chaos.Faults{StatusRate: 0.5}})
	if err != nil {
		panic(err)
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := unherdhttp.NewTransport(inj.Transport(base), unherdhttp.Config{
		// Immediate retries keep the example fast; leave Backoff zero in
		// production for full jitter.
		Retry: retry.Config{MaxAttempts: 5, Backoff: backoff.Schedule{Immediate: true}},
	})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: tr}
	ok := 0
	for range 20 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	c := inj.Counts()
	fmt.Printf("%d of 20 calls succeeded; %d requests, %d of them answered 503 by the injector\n", ok, c.Calls, c.Statuses)
	// Output: 19 of 20 calls succeeded; 34 requests, 15 of them answered 503 by the injector
}

// Wrap puts faults in front of any operation; here a retry loop rides
// over an error rate of 30%.
func ExampleWrap() {
	inj, err := chaos.New(chaos.Config{Seed: 1, Faults: chaos.Faults{ErrorRate: 0.3}})
	if err != nil {
		panic(err)
	}
	lookup := chaos.Wrap(inj, func(ctx context.Context) (string, error) { return "value", nil })
	p, err := retry.New(retry.Config{MaxAttempts: 4, Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		panic(err)
	}
	for range 3 {
		v, err := retry.DoValue(context.Background(), p, lookup)
		fmt.Println(v, err)
	}
	fmt.Printf("attempts: %d, injected errors: %d\n", inj.Counts().Calls, inj.Counts().Errors)
	// Output:
	// value <nil>
	// value <nil>
	// value <nil>
	// attempts: 4, injected errors: 1
}

// Phases schedule an outage: with the clock of the test, every call from
// 10 s to 16 s after the start fails.
func ExamplePhase() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := now
	inj, err := chaos.New(chaos.Config{
		Now:    func() time.Time { return now },
		Phases: []chaos.Phase{{From: 10 * time.Second, To: 16 * time.Second, Faults: chaos.Faults{ErrorRate: 1}}},
	})
	if err != nil {
		panic(err)
	}
	ping := chaos.Wrap(inj, func(ctx context.Context) (struct{}, error) { return struct{}{}, nil })
	for _, at := range []time.Duration{0, 10 * time.Second, 15 * time.Second, 16 * time.Second} {
		now = start.Add(at)
		_, err := ping(context.Background())
		fmt.Println(at, err)
	}
	// Output:
	// 0s <nil>
	// 10s chaos: injected fault
	// 15s chaos: injected fault
	// 16s <nil>
}
