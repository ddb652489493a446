// Package handlerretry defines an Analyzer that reports retry loops in
// HTTP handlers around calls to other services.
//
// A handler's caller may retry too; retrying here as well multiplies the
// attempts at every layer (three layers of three attempts send 27
// requests to the bottom one), exactly when it is failing. Retry at the
// edge only: make a single attempt here, or call through retry.Do (or an
// unherdhttp.Transport) with the request's context behind
// unherdhttp.Middleware, which makes calls on behalf of a retrying caller
// single attempts.
//
// A call counts as going to another service when it sends an HTTP
// request, takes a context.Context or takes gRPC call options. A handler
// is a function taking an http.ResponseWriter and an *http.Request, or a
// function literal inside one.
package handlerretry

import "github.com/unherd/unherd/unherdvet/internal/check"

// Analyzer reports retry loops in HTTP handlers around remote calls.
var Analyzer = check.Loops("handlerretry", "report retry loops in HTTP handlers around calls to other services", reportInHandler)
