package a

import "net/http"

// Positive: middleware that retries the upstream call for every request
// multiplies the retries of the clients in front of it.
func retrying(next http.Handler, upstream *http.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var resp *http.Response
		var err error
		for i := 0; i < 3; i++ { // want `handlerretry: retry loop in an HTTP handler`
			resp, err = upstream.Do(r.Clone(r.Context()))
			if err == nil {
				break
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		next.ServeHTTP(w, r)
	})
}

// Negative: middleware that calls upstream once and reports the failure.
func once(next http.Handler, upstream *http.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := upstream.Do(r.Clone(r.Context()))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		next.ServeHTTP(w, r)
	})
}
