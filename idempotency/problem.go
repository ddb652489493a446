package idempotency

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// draftErrors is the draft's section on the error responses it defines.
const draftErrors = "https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-idempotency-key-header-07#section-2.7"

// Problem codes: the "code" member of every problem+json body the
// middleware writes, which tells apart problems sharing a status.
const (
	CodeKeyMissing        = "key-missing"        // 400: a required key is absent
	CodeKeyMalformed      = "key-malformed"      // 400: the header does not parse
	CodeBodyTooLarge      = "body-too-large"     // 413: the body exceeds MaxRequestBody
	CodeKeyInFlight       = "key-in-flight"      // 409: the key's first request still runs
	CodeReplayUnavailable = "replay-unavailable" // 409: the key completed, its response was not stored
	CodeKeyMismatch       = "key-mismatch"       // 422: the key was used with another request
	CodeStoreUnavailable  = "store-unavailable"  // 503: the store failed; nothing ran
	CodeStoreFull         = "store-full"         // 503: the store has no room for the key (ErrStoreFull); nothing ran
	CodeHandlerTimeout    = "handler-timeout"    // 503: the handler exceeded HandlerTimeout
)

// problem is an RFC 9457 problem detail.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
}

// writeProblem writes an application/problem+json response. retryAfter,
// if positive, is sent as Retry-After seconds.
func writeProblem(w http.ResponseWriter, status int, code, detail string, retryAfter int) {
	p := problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
	switch code {
	case CodeKeyMissing, CodeKeyMalformed, CodeKeyInFlight, CodeKeyMismatch:
		p.Type = draftErrors
	}
	body, _ := json.Marshal(p) // cannot fail: strings and an int
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
