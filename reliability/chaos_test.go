//go:build reliability

package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/chaos"
	"github.com/unherd/unherd/unherdhttp"
)

// TestFaultsSurvived sends GETs through unherd's defaults over a link
// that fails in every way package chaos knows: connection resets, 503s
// with and without Retry-After, 429s, and a lognormal latency with
// spikes. Every call must end (none lost: none still running when the
// run ends), and the retries must hide nearly every fault from the
// caller. The table it logs is RELIABILITY.md's "faults survived".
func TestFaultsSurvived(t *testing.T) {
	const workers, perWorker = 250, 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	cases := []struct {
		name   string
		faults chaos.Faults
	}{
		{"5% resets", chaos.Faults{ResetRate: 0.05}},
		{"10% 503 with Retry-After: 1", chaos.Faults{StatusRate: 0.1, RetryAfter: time.Second}},
		{"5% 429", chaos.Faults{StatusRate: 0.05, Status: http.StatusTooManyRequests}},
		{"3% resets, 7% 503, lognormal latency (2 ms median) with 1% spikes of 50 ms", chaos.Faults{ResetRate: 0.03, StatusRate: 0.07, Latency: spiky}},
	}
	var rows []string
	for i, tc := range cases {
		inj, err := chaos.New(chaos.Config{Seed: uint64(i + 1), Faults: tc.faults})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := unherdhttp.NewTransport(inj.Transport(pooled(t)), unherdhttp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		var ok, failed, ended atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range perWorker {
					if get(ctx, tr, srv.URL) == http.StatusOK {
						ok.Add(1)
					} else {
						failed.Add(1)
					}
					ended.Add(1)
				}
			})
		}
		wg.Wait()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		c := inj.Counts()
		calls := int64(workers * perWorker)
		faults := c.Errors + c.Resets + c.Statuses
		row := fmt.Sprintf("| %s | %d | %d | %d (%.2f%%) | %.3f | %d |", tc.name, calls, faults, failed.Load(),
			100*float64(failed.Load())/float64(calls), float64(c.Calls)/float64(calls), calls-ended.Load())
		rows = append(rows, row)
		t.Log(row)
		if timedOut || ended.Load() != calls {
			t.Errorf("%s: %d of %d calls ended (run timed out: %v)", tc.name, ended.Load(), calls, timedOut)
		}
		if float64(failed.Load()) > 0.01*float64(calls) {
			t.Errorf("%s: %d of %d calls failed, want at most 1%%", tc.name, failed.Load(), calls)
		}
	}
	table := "| faults injected | calls | faults | calls that failed | requests per call | calls lost |\n| --- | --- | --- | --- | --- | --- |\n" + join(rows)
	t.Logf("faults survived:\n%s", table)
	if path := os.Getenv("UNHERD_RELIABILITY_REPORT"); path != "" {
		report(t, path, "faults", table)
	}
}

// spiky is a lognormal latency with a 2 ms median, plus 50 ms for 1% of
// requests.
func spiky(r *rand.Rand) time.Duration {
	return chaos.LogNormal(2*time.Millisecond, 0.5)(r) + chaos.Spike(0.01, 50*time.Millisecond)(r)
}
