// Package fetch is the README's "before": a hand-written retry loop.
package fetch

import (
	"context"
	"net/http"
	"time"
)

// Fetch gets url, trying three times, a second apart.
func Fetch(ctx context.Context, url string) (resp *http.Response, err error) {
	for i := 0; i < 3; i++ {
		if resp, err = http.Get(url); err == nil {
			return resp, nil
		}
		time.Sleep(time.Second)
	}
	return nil, err
}
