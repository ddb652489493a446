// Package storm holds the retry loop unherd vet exists to find.
package storm

import (
	"context"
	"net/http"
	"time"
)

// Fetch retries a GET three times, a second apart.
func Fetch(ctx context.Context, url string) (*http.Response, error) {
	var err error
	for i := 0; i < 3; i++ {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if rerr != nil {
			return nil, rerr
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			return resp, nil
		}
		time.Sleep(time.Second)
	}
	return nil, err
}
