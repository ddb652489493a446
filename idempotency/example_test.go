package idempotency_test

import (
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
