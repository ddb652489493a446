package a

import (
	"context"
	"net/http"
	"time"
)

// Negative: the request is made with http.NewRequest and never given a
// context, so req.Context() is context.Background(): nothing can give up
// through it.
func pollUpdates(hc *http.Client, url string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return
	}
	for {
		resp, err := hc.Do(req)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		resp.Body.Close()
	}
}

// Positive: the same loop with a request that carries the caller's
// context.
func pollUpdatesCtx(ctx context.Context, hc *http.Client, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	for {
		resp, err := hc.Do(req)
		if err != nil {
			time.Sleep(time.Second) // want `sleepctx: retry loop waits with time.Sleep although ctx is in scope`
			continue
		}
		resp.Body.Close()
	}
}
