// Package fetch is the README's "after": the same call through unherd.
package fetch

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// client is built once for the dependency and shared: its Transport
// retries with full jitter, a retry budget and Retry-After.
var client *http.Client

func init() {
	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{Retry: retry.Config{AttemptTimeout: 2 * time.Second}})
	if err != nil {
		log.Fatal(err)
	}
	client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// Fetch gets url; ctx bounds the whole call, retries included.
func Fetch(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}
