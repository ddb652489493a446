package fix

import (
	"context"
	"net/http"
	"time"
)

func get(ctx context.Context) (int, error) { return 0, nil }

type result struct{ n int }

// Fixed: the sleep becomes a select that gives up with ctx's error.
func fetch(ctx context.Context) (*result, int, error) {
	var err error
	for i := 0; i < 3; i++ {
		var n int
		if n, err = get(ctx); err == nil {
			return &result{n}, n, nil
		}
		time.Sleep(2 * time.Second) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
	}
	return nil, 0, err
}

// Fixed: a handler returns when its request's context is done.
func handler(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < 3; i++ {
		if _, err := get(r.Context()); err == nil {
			return
		}
		<-time.After(time.Second) // want `although r.Context\(\) is in scope`
	}
}

// Not fixed: no error to give up with.
func count(ctx context.Context) (int, bool) {
	for i := 0; i < 3; i++ {
		if n, err := get(ctx); err == nil {
			return n, true
		}
		time.Sleep(time.Second) // want `although ctx is in scope`
	}
	return 0, false
}
