package storetest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// ExactlyOnceResult is what ExactlyOnce saw.
type ExactlyOnceResult struct {
	Requests int // sent
	Runs     int // times the handler ran
	Fresh    int // responses from the run itself
	Replayed int // responses replayed from the record
	Other    int // anything else (a 409 after the wait, an error)
}

func (r ExactlyOnceResult) String() string {
	return fmt.Sprintf("%d requests: handler ran %d times; %d fresh, %d replayed, %d other responses", r.Requests, r.Runs, r.Fresh, r.Replayed, r.Other)
}

// ExactlyOnce starts one loopback HTTP server per store, each behind a
// Middleware of its own (as separate processes would be), sends n
// concurrent POST requests with one key and one body spread over the
// servers, and fails t unless the handler ran exactly once and every
// response is that run's, fresh once and replayed the other n-1 times.
// The handler takes hold long enough for the requests to overlap, and the
// middleware waits up to a minute for it (Config.Wait), so no request
// should see a 409.
func ExactlyOnce(t *testing.T, n int, hold time.Duration, stores ...idempotency.Store) ExactlyOnceResult {
	t.Helper()
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		body, _ := io.ReadAll(r.Body)
		time.Sleep(hold) // the work whose duplicates the requests race
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%q}`, body)
	})
	var urls []string
	var storeErrors atomic.Int32
	onError := func(_ *http.Request, err error) {
		if storeErrors.Add(1) <= 3 {
			t.Logf("store error: %v", err)
		}
	}
	for _, s := range stores {
		// The store is given ample time: what is checked is that the
		// handler runs once, not how fast a loaded store answers.
		m, err := idempotency.New(idempotency.Config{Store: s, Wait: time.Minute, StoreTimeout: 20 * time.Second, OnError: onError})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m.Handler(handler))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	key := `"exactly-once-` + random() + `"`

	var mu sync.Mutex
	res := ExactlyOnceResult{Requests: n}
	var first string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodPost, urls[i%len(urls)]+"/charges", strings.NewReader("100 EUR"))
			req.Host = "payments.test" // the servers behind one name, as a load balancer shows them: the Host is fingerprinted
			req.Header.Set(idempotency.KeyHeader, key)
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Other++
				t.Errorf("request %d: %v", i, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode != http.StatusCreated:
				res.Other++
				if res.Other <= 3 {
					t.Errorf("request %d: %d %s", i, resp.StatusCode, body)
				}
				return
			case resp.Header.Get(idempotency.ReplayedHeader) == "true":
				res.Replayed++
			default:
				res.Fresh++
			}
			if first == "" {
				first = string(body)
			} else if string(body) != first {
				t.Errorf("request %d: body %q, want the run's %q", i, body, first)
			}
		})
	}
	close(start)
	wg.Wait()
	res.Runs = int(runs.Load())
	if res.Runs != 1 || res.Fresh != 1 || res.Replayed != n-1 {
		t.Errorf("%v; want 1 run, 1 fresh and %d replayed", res, n-1)
	}
	return res
}
