package a

import (
	"context"
	"net/http"
	"time"
)

func lookup(ctx context.Context, id string) (string, error) { return "", nil }
func parse(s string) (int, error)                           { return 0, nil }

// Positive: a handler retries a call to another service.
func handler(w http.ResponseWriter, r *http.Request) {
	var v string
	var err error
	for i := 0; i < 3; i++ { // want `handlerretry: retry loop in an HTTP handler around a call to another service`
		v, err = lookup(r.Context(), r.URL.Query().Get("id"))
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.Write([]byte(v))
}

type server struct{ c *http.Client }

// Positive: ServeHTTP retries an HTTP call, in a closure.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fetch := func() (*http.Response, error) {
		var err error
		for i := 0; i < 3; i++ { // want `retry loop in an HTTP handler`
			resp, err := s.c.Get("http://backend/")
			if err == nil {
				return resp, nil
			}
		}
		return nil, err
	}
	fetch()
}

// Negative: a local computation retried in a handler is not a remote call.
func local(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < 3; i++ {
		if _, err := parse(r.URL.Path); err == nil {
			break
		}
	}
}

// Negative: the same loop outside a handler.
func client(ctx context.Context) (string, error) {
	for i := 0; i < 3; i++ {
		v, err := lookup(ctx, "x")
		if err == nil {
			return v, nil
		}
		time.Sleep(time.Second)
	}
	return "", nil
}

// Negative: a handler without a retry loop.
func single(w http.ResponseWriter, r *http.Request) {
	v, err := lookup(r.Context(), "x")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Write([]byte(v))
}
