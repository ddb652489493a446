// Package notimeout defines an Analyzer that reports HTTP calls with no
// timeout at all.
//
// A call without a timeout waits as long as the server keeps the
// connection open: a hung dependency then holds a goroutine, a connection
// and whatever the caller locked, for ever, and a caller that retries
// never gets to retry. It reports:
//
//   - http.Get, http.Head, http.Post and http.PostForm, and those methods
//     and Do on http.DefaultClient: the default client has no Timeout,
//     and the first four take no context;
//   - the same calls on an http.Client built in the package (a composite
//     literal, new(http.Client) or a zero http.Client variable) without a
//     Timeout, for Get, Head, Post
//     and PostForm, and for Do of a request built with http.NewRequest
//     (no context, so no deadline).
//
// A request built with http.NewRequestWithContext is assumed to carry a
// deadline; a client the analyzer did not see built is assumed to have a
// timeout. The fix is an http.Client with Timeout set, or
// http.NewRequestWithContext with a context deadline; with
// unherdhttp.Transport, Config.AttemptTimeout bounds each attempt too.
package notimeout

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports HTTP calls without any timeout.
var Analyzer = check.Files("notimeout", "report HTTP calls with no timeout: the default client, or a client without Timeout and a request without context", reportNoTimeout)
