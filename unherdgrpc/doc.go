// Package unherdgrpc brings unherd's retry policies, retry budgets and
// hedging to gRPC clients, and one-layer retry marking, pushback and
// idempotency to gRPC servers.
//
// A client builds one [Client] per dependency and dials with its
// options:
//
//	c, err := unherdgrpc.NewClient(unherdgrpc.Config{}) // safe defaults
//	...
//	cc, err := grpc.NewClient(target, append(c.DialOptions(), creds)...)
//
// and a server installs a [Server]'s options:
//
//	s, err := unherdgrpc.NewServer(unherdgrpc.ServerConfig{})
//	...
//	srv := grpc.NewServer(s.ServerOptions()...)
//
// # Retries
//
// The interceptors retry each call by a retry.Policy (Config.Retry, with
// its budget, guards and observer): UNAVAILABLE is transient,
// RESOURCE_EXHAUSTED throttled (retried from the schedule's throttled
// base), the attempt's own timeout (retry.Config.AttemptTimeout, inside
// the call's deadline) a retryable timeout, and every other code, the
// caller's cancellation and the caller's deadline end the call at once;
// Config.Codes changes the table. A server's grpc-retry-pushback-ms
// trailer is a floor over the schedule's jittered delay, as Retry-After
// is in package unherdhttp: the wait is at least the pushback and at
// least the schedule's own delay, a pushback above
// retry.Config.MaxServerDelay ends the retries, and a negative or
// malformed one ends them too, as gRFC A6 says. A google.rpc.RetryInfo
// status detail, which Google APIs and OpenTelemetry's OTLP exporters
// send instead, is a floor by the same rule; with both, the retry waits
// at least the longer, and a pushback that asks not to retry wins (see
// AttemptError). Every attempt after the
// first carries grpc-previous-rpc-attempts. The error of a failed call is
// an [*Error]: status.FromError gives the last attempt's status
// unchanged, and errors.Is reaches the retry loop's reason. An
// unherdotel.Metrics.GRPCObserver set as retry.Config.Observer records
// gRFC A96's per-call retry metrics.
//
// A call is committed, and never retried again, once its response
// headers arrive, as A6 says ("the RPC is committed" when "the client
// receives Response-Headers"): a server that sent its headers, or its
// first message, and then failed has handed the caller state that a
// retry cannot take back. A status sent in trailers only (a failure
// before anything else) leaves the call open. Until the commit a stream
// keeps the messages sent (up to Config.MaxBufferedMessages and
// MaxBufferedBytes) and sends them again on the next attempt; after it,
// or past the limits, a failure goes to the caller as it is. A stream's
// Header waits for the headers, commits when they come, and retries an
// attempt that ended without them, as grpc-go's own retries do.
//
// # Hedging
//
// grpc-go never shipped A6's hedging. With Config.Hedge, a unary call
// that has had no answer after the hedger's delay is sent again, to the
// next replica the channel's balancer picks (round_robin sends it to
// another one), and the first success wins; a fast failure of one
// replica does not cancel a request that may yet succeed on another, and
// only when every request of an attempt has failed does the retry loop
// see the last failure. Each hedge is a copy of the attempt that the
// retry policy keeps the books of (hedge.DoAttempt): its guards admit the
// hedge and its budget pays for it.
// Hedge only methods that are safe to run twice (Config.HedgeMethod).
//
// # grpc-go's own retries
//
// grpc-go's retries (enabled by a service config's retryPolicy) would
// multiply with the Client's: 3 attempts under 3 attempts are 9. They are
// kept off: DialOptions includes grpc.WithDisableRetry, and the
// interceptors installed by hand (UnaryClientInterceptor,
// StreamClientInterceptor), which cannot see whether the channel has
// retries, send every attempt with grpc.MaxRetryRPCBufferSize(0), which
// makes grpc-go commit the attempt as soon as its first message is sent,
// so that they do not multiply with a service config's retryPolicy
// either (see [Client]). [ParseServiceConfig] converts a whole service
// config (the JSON grpc.WithDefaultServiceConfig takes): each method's
// policy is picked by name as grpc-go picks it, and one retryThrottling
// budget serves the channel; its DialOptions install it.
// [ParseMethodConfig] converts one methodConfig entry's retryPolicy or
// hedgingPolicy, and a retryThrottling, to a Config. A6's 2024
// jitter (each delay multiplied by a uniform draw in [0.8, 1.2]) becomes
// full jitter, uniform in [0, delay], as A6 first had it.
//
// # Servers
//
// A Server marks the context of a call whose caller retries with
// retry.WithOuterRetry, so that the handler's own outgoing calls make one
// attempt and only the edge of a call chain retries; it can shed load
// with RESOURCE_EXHAUSTED and a pushback (ServerConfig.Overloaded); and
// with ServerConfig.Idempotency it runs a unary call that carries an
// idempotency-key header once, through package idempotency's Store (a
// Memory store, or unherdredis and unherdpg for a fleet).
//
// Shedding refuses work before the handler starts. With
// ServerConfig.Limiter (a limit.Limiter: an adaptive concurrency limit,
// or a fixed one) a call over the limit, unary or stream, is refused at
// once with RESOURCE_EXHAUSTED, a grpc-retry-pushback-ms trailer and a
// google.rpc.RetryInfo detail of the same delay
// (ServerConfig.LimitPushback, 1 s by default), through the same refusal
// as Overloaded; a Client, and grpc-go's own retries, wait at least the
// pushback before they retry, and a Client pays the retry from its
// budget. The caller's deadline arrives as grpc-timeout and is already on
// the handler's context; a call whose deadline has passed, or whose
// client has cancelled it, by the time the interceptor runs is refused
// with DEADLINE_EXCEEDED or CANCELLED without running the handler. An
// admitted call is released to the limiter as ServerConfig.Limiter says:
// a call that ran past its deadline is the limiter's overload signal.
// TestOverload (build tag reliability) runs package reliability's
// overload over gRPC, a real server on loopback TCP, and judges a Server
// with a Limiter at its defaults against the same goals:
//
//	go test -tags reliability -count=1 -v -run TestOverload .
//
// This follows gRFC A6, "gRPC Retry Design",
// https://github.com/grpc/proposal/blob/master/A6-client-retries.md, for
// the metadata keys, the commit point, pushback and the service config;
// and Dean and Barroso, "The Tail at Scale", Communications of the ACM
// 56(2), 2013, for hedging.
package unherdgrpc
