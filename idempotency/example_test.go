package idempotency_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/unherd/idempotency"
)

func Example() {
	charges := 0
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charge %d\n", charges)
	})
	m, err := idempotency.New(idempotency.Config{
		Principal: func(r *http.Request) string { return r.Header.Get("X-Account") },
		Required:  true,
	})
	if err != nil {
		panic(err)
	}
	h := m.Handler(handler)

	for range 3 { // a request and two retries with the same key
		r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":100}`))
		r.Header.Set("X-Account", "acct_1")
		r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body, _ := io.ReadAll(w.Body)
		fmt.Printf("%d replayed=%q %s", w.Code, w.Header().Get("Idempotent-Replayed"), body)
	}
	fmt.Println("charges:", charges)
	// Output:
	// 201 replayed="" charge 1
	// 201 replayed="true" charge 1
	// 201 replayed="true" charge 1
	// charges: 1
}

// A Keeper gives a protocol of your own the same exactly-once rules: a
// message handler claims each message's key, runs the side effect once,
// and answers duplicates from the stored outcome.
func ExampleKeeper() {
	k, err := idempotency.NewKeeper(idempotency.KeeperConfig{}) // a Memory store
	if err != nil {
		panic(err)
	}
	sent := 0
	handle := func(ctx context.Context, account, key string, msg []byte) string {
		c, f, err := k.Claim(ctx, idempotency.StoreKey(account, true, key), sha256.Sum256(msg), nil)
		switch {
		case err != nil:
			return "store unavailable: nothing done, try again"
		case c.State == idempotency.Completed:
			return string(c.Response.Body) + " (replayed)"
		case c.State == idempotency.InFlight:
			return "still running: try again later"
		}
		sent++ // the side effect, run under f, the flight's context
		out := fmt.Sprintf("email %d sent", sent)
		if err := f.Complete(&idempotency.Response{Status: 200, Body: []byte(out)}); err != nil {
			fmt.Println(err)
		}
		return out
	}
	for range 2 {
		fmt.Println(handle(context.Background(), "acct_1", "welcome-42", []byte("to: ada@example.com")))
	}
	// Output:
	// email 1 sent
	// email 1 sent (replayed)
}

// A Memory store bounds what one caller's keys hold: a caller flooding
// the store with new keys is refused (503 "store-full") once its records
// take its share, while other callers' keys still run, and the keys it
// holds still replay.
func ExampleMemoryConfig() {
	store, err := idempotency.NewMemory(idempotency.MemoryConfig{
		MaxBytes: 1 << 20,
		MaxShare: 0.05, // one caller holds at most 51.2 KiB
	})
	if err != nil {
		panic(err)
	}
	m, err := idempotency.New(idempotency.Config{
		Store:     store,
		Principal: func(r *http.Request) string { return r.Header.Get("X-Account") },
	})
	if err != nil {
		panic(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	post := func(account, key string) int {
		r := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":100}`))
		r.Header.Set("X-Account", account)
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}

	first := post("acct_flood", "key-0")
	refused := 0
	for i := 1; i <= 2000; i++ {
		if post("acct_flood", "key-"+strconv.Itoa(i)) == http.StatusServiceUnavailable {
			refused++
		}
	}
	fmt.Println("flooder's first key:", first, "then refused:", refused > 0)
	fmt.Println("flooder's first key again:", post("acct_flood", "key-0"))
	fmt.Println("another caller:", post("acct_other", "key-0"))
	// Output:
	// flooder's first key: 201 then refused: true
	// flooder's first key again: 201
	// another caller: 201
}

// A server that shuts down stops taking requests first, then waits for
// the store calls the middleware still runs in the background (a
// release tried again after the store failed), then closes the store.
func ExampleMiddleware_Drain() {
	m, err := idempotency.New(idempotency.Config{})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", `"order-1"`)
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}

	srv.Close() // http.Server.Shutdown(ctx) for a real server
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Drain(ctx); err != nil {
		fmt.Println(err) // some records may stay in flight until their lease ends
		return
	}
	fmt.Println("drained; now close the store")
	// Output:
	// 201
	// drained; now close the store
}
