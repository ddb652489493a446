package fix

import (
	"context"
	"net/http"
	"strings"
)

// Fixed: a POST assigned to variables declared before, in a handler.
func forward(w http.ResponseWriter, r *http.Request) {
	var resp *http.Response
	var err error
	resp, err = http.Post("http://backend/", "text/plain", strings.NewReader("x")) // want `http.Post uses http.DefaultClient`
	if err == nil {
		resp.Body.Close()
	}
}

// Fixed: a bare GET in a retry loop, with the caller's context at hand.
func fetch(ctx context.Context, url string) (*http.Response, error) {
	var lastErr error
	for i := 0; i < 3; i++ {
		resp, err := http.Get(url) // want `notimeout: http.Get uses http.DefaultClient`
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Not fixed: no context in scope.
func noContext(url string) error {
	_, err := http.Get(url) // want `http.Get uses http.DefaultClient`
	return err
}
