package idempotency_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

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
