// Package idempotency defines an Analyzer that reports retry loops that
// repeat a POST or PATCH request without an Idempotency-Key header.
//
// A POST whose response was lost may have been applied; sending it again
// applies it twice (a second charge, a duplicate order). A server that
// honours the Idempotency-Key header (IETF draft
// draft-ietf-httpapi-idempotency-key-header) applies a keyed request at
// most once, so a retry is safe only with a key that stays the same on
// every attempt. unherdhttp.Transport retries POST and PATCH only with a
// key, or when the request provably never left; Config.AutoIdempotencyKey
// adds one.
//
// The request's method is known for http.Post, http.PostForm and the
// Client methods of those names, and for Do and RoundTrip of a request
// built in the same function by http.NewRequest or
// http.NewRequestWithContext with a constant method. A loop is not
// reported when the function mentions the header's name anywhere, or
// hands the request to another function (which might set it).
//
// A loop that sends again an *http.Request it was handed (a parameter,
// or a copy made from it each round, such as req.Clone(ctx)) is
// reported too, through whatever it calls to send it (a client's Do, a
// wrapped handler), when its function never reads the request's Method
// nor names the header, and the package names POST or PATCH: such a
// wrapper resends the POSTs the package hands it.
package idempotency

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports retried POST and PATCH requests without an
// Idempotency-Key.
var Analyzer = check.Loops("idempotency", "report retried POST and PATCH requests without an Idempotency-Key header", reportUnkeyed)
