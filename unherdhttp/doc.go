// Package unherdhttp brings the retry policy to net/http: a
// [http.RoundTripper] that retries what is safe to retry, server
// [Middleware] that keeps retries at one layer of a call chain, and
// server middleware ([Shed]) that refuses work before it starts.
//
// # Transport or Middleware
//
// Use a [Transport] on the client side, one per dependency, shared by all
// goroutines:
//
//	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{})
//	client := &http.Client{Transport: tr}
//
// Wrap the handler of every service that is itself called by clients
// that retry in [Middleware]. For a request its caller repeats (an
// idempotent method, an Idempotency-Key, a repeat that carries the
// attempt header), calls the handler makes with the request's context
// then make a single attempt (retry.Config.NestedAttempts) and return
// failures promptly, so only the edge of the chain retries; a request the
// caller sends once, such as a POST without a key, keeps the handler's
// own retries. Use both in a service that is called and calls others.
//
// # What is retried, and why
//
// A request may be sent again only if sending it twice does no harm:
//
//   - GET, HEAD, OPTIONS, TRACE, PUT and DELETE, the methods RFC 9110,
//     section 9.2.2 defines as idempotent
//     (https://www.rfc-editor.org/rfc/rfc9110#section-9.2.2);
//   - any request carrying an Idempotency-Key (or X-Idempotency-Key)
//     header, by which the server promises to apply it at most once: IETF
//     draft-ietf-httpapi-idempotency-key-header
//     (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/).
//     This is also net/http's own rule for replaying a request on a
//     kept-alive connection that the server closed (Request.isReplayable).
//     Config.AutoIdempotencyKey adds a random key (a UUIDv4, the same on
//     every attempt and hedge of one logical request) to POST and PATCH;
//   - POST, PATCH and other requests without a key only when the failure
//     proves the request never left: the connection could not be made (a
//     dial error, such as connection refused), or the attempt timed out
//     before it had a connection. A reset after the request was written
//     might follow a server that acted on it; such a failure comes back as
//     a [NotReplayedError].
//
// Of the outcomes of a request that may be repeated:
//
//   - 408, 429, 502, 503 and 504 are retried, and so are 500 and any
//     other 5xx but 501 (505, 507, 520 to 527, ...), as go-retryablehttp,
//     the AWS SDKs and .NET's standard resilience handler retry them,
//     unless Config.NoRetry500: a 500 is as often an overloaded or
//     restarting server as a bug, and the retry budget bounds what a bug
//     costs (a few retries per hundred requests once the budget is
//     empty). 429 and 503 are throttling answers: they wait
//     from the schedule's throttled base. A 409 with Retry-After to a
//     request that carries an idempotency key is the idempotency draft's
//     "a request with this key is in progress" (package idempotency
//     answers it so): retried after that delay, so that the call ends
//     with the one execution's answer. Other 4xx (a 409 without
//     Retry-After, or to a request without a key, among them) and 501
//     are permanent and go back at once.
//   - Transport errors (connection refused or reset, an unexpected EOF on
//     a reused connection, an attempt timeout) are retried; certificate
//     verification failures and an https request answered by a plain
//     HTTP server are permanent (errors.Is(err, http.ErrSchemeMismatch)
//     holds for the latter, as with a plain http.Client). The caller's own
//     cancellation or deadline is never retried.
//   - A request net/http refuses to send (a nil Header map, an invalid
//     method, header name or value, no host, or a scheme other than http
//     and https when the base is an *http.Transport) is the caller's bug:
//     it fails at once with an error that matches [ErrInvalidRequest],
//     without a retry, a token from the budget or a failure reported to
//     the guards.
//   - Config.Classify can override any of this, except replay safety.
//
// Every failed attempt reaches the retry loop of package retry as an
// error marked for its class (a [*StatusError] for a response), so that
// the order of the decision, the deadline rule, budgets and guards are
// retry's, unchanged. When the loop stops on a response, the caller gets
// that last response with a nil error, its body unread; when it stops on a
// transport error, the caller gets the loop's *retry.Error, through which
// errors.Is reaches the cause. Every response that is not handed back is
// drained (up to Config.MaxDrainedBody, and for 20 ms at most, so a body
// that stalls cannot hold the call) and closed before the wait, so its
// connection is reused.
//
// Guards (breakers, throttles) and budgets see every attempt with its own
// class. A failure the loop must not repeat (a 500 with NoRetry500, a
// POST the server may have seen, a body that cannot be rewound) is marked
// judged Final (retry.Verdict.Final): the loop stops with retry.ErrFinal, and a breaker
// still counts a 500 or a 503 as the server failure it is. Only permanent
// statuses (other 4xx, 501) are class Permanent.
//
// # Brown-outs and callers that loop
//
// When the retry budget is empty, a request whose retry it refused still
// waits, at the pace of the retries it had left, before its last
// response goes back (retry.Config.OnBudgetExhausted:
// retry.ReturnAtOnce turns this off). A caller that loops,
// coming straight back after a failure, so keeps the backoff's pace, and
// a dependency that answers 503 to everything does not see its load
// multiplied. Measured over loopback (package reliability: 200 looping
// callers and an open stream, a 6 s brown-out of 503s; see
// RELIABILITY.md), the defaults hold the server's load during the fault
// at about 0.2 times its load before (an open stream: 1.0 times); with
// ReturnAtOnce the looping callers multiplied it five- to twentyfold.
//
// # Retry-After
//
// A Retry-After header (RFC 9110, section 10.2.3; delay-seconds or an
// HTTP-date, see [ParseRetryAfter]) on a retryable response is a floor
// over the schedule's wait, never a replacement for it: the wait is the
// longer of the schedule's own jittered delay and the server's delay with
// up to retry.Config.ServerJitter (10%) added on top, so a thousand
// clients told "0" (or a date in the past) still spread over the
// schedule's window, and a thousand told "5" do not return in one wall.
// An x-amz-retry-after header (milliseconds, as AWS services send it) is
// a server delay too, without making the failure a throttling one; under
// retry.AWS2026 it is clamped to [computed backoff, computed backoff +
// 5 s], as the AWS SDKs do. An invalid value of either header is ignored.
// A Retry-After longer than retry.Config.MaxServerDelay (30 s by
// default) ends the retries, unless retry.Config.ClampServerDelay is set: coming back sooner than the server allowed
// would only add load, so the last response goes back at once, with a nil
// error (the loop stops with retry.ErrServerDelayTooLong, and the
// Retry.Observer hears no observe.Retry). Likewise, a wait that would end after
// the request context's deadline is not started: the last response goes
// back at once.
//
// # Bodies
//
// The caller's request is never modified. The first attempt sends it as
// it is, when nothing about it needs to change; every later attempt is a
// Request.Clone with a body from GetBody. A body without GetBody is read
// into memory, up to Config.MaxBufferedBody (64 KiB), so that it can be
// sent again; a larger one is sent once and never retried.
//
// # Hedging
//
// With Config.Hedge set, each attempt of a GET or HEAD (Config.HedgeMethod
// to choose other methods; only requests that may be repeated qualify) is a
// hedged call of package hedge: if the request has had no answer after
// the hedger's delay (fixed, or a latency quantile), the same request is
// sent again, and the first success wins: a response the Transport would
// hand back as it is. A failure (a status it would retry or return as a
// failure, such as 503, 429, 500 or 404, or a transport error such as a
// refused connection) does not: a fast 503 from an overloaded replica
// must not cancel a request about to succeed elsewhere. A request that
// fails while another is still running waits for it (for as long as the
// other's attempt timeout allows; see hedge.DoAttempt); when every request of the attempt has
// failed, the last failure is the attempt's, and the retry loop judges it
// as usual. A primary that fails before its hedge delay so ends the
// attempt at once, and the retry loop's backoff, not a hedge, follows.
// A hedger with Config.NonFatal set follows package hedge's rule
// instead: a failure it calls fatal settles the attempt at once and
// cancels the others, one it calls non-fatal starts the next hedge at
// once.
// Failures are never fed to the hedger's latency estimator. The losing
// requests are cancelled, and every response that does not go back is
// drained and closed. A hedge is a copy of the attempt that the retry
// policy keeps the books of: its guards (a circuit breaker, a throttle)
// admit each hedge and hear how it ended, and its budget pays for each
// hedge as for a transient retry; hedging also backs off on its own when
// hedges stop winning (Dean
// and Barroso, "The Tail at Scale", CACM 2013,
// https://research.google/pubs/the-tail-at-scale/).
//
// # The attempt header
//
// Every request after the first for one logical request, whether a retry
// or a hedge, carries the header Unherd-Attempt with its number: "2",
// "3", and so on ([AttemptHeader]). The first carries none, so a request
// that is never repeated goes out exactly as the caller built it. Servers
// can use the header to see, count or shed repeated traffic.
//
// # Timeouts
//
// There are two, because they answer different questions:
//
//   - Config.ConnectTimeout (5 s by default) bounds getting a connection:
//     the dial and the TLS handshake. Set it from the network: a few round
//     trips plus a TLS handshake on a loaded host. After a deploy every
//     connection is cold; a slow handshake then says nothing about how
//     the server handles requests.
//   - Config.Retry.AttemptTimeout (none by default) bounds each attempt from
//     the moment it has a connection to the arrival of the response
//     headers. Set it from the latency distribution: the percentile whose
//     tail you accept as false timeouts (p99 cuts off and repeats 1% of
//     healthy attempts), plus headroom. Config.Retry.Timeouts plugs in an
//     adaptive timeout that follows a latency quantile instead.
//
// Only net/http's own *http.Transport reports when an attempt has its
// connection (through httptrace). With any other base RoundTripper (a
// wrapper of http.Transport included), the attempt timeout bounds the
// whole attempt from its start, connection included: ConnectTimeout then
// plays no part, and the base's own dialer bounds the connect phase.
//
// The attempt timeout does not cover reading the body: the response body
// stays readable after RoundTrip returns, until it is closed, and the
// request's context bounds the whole exchange. An attempt timeout is a
// retryable Timeout; the caller's deadline never is. The Transport times
// the attempt itself: the retry.Policy it builds from Config.Retry has no
// attempt timeout of its own, whose end of the attempt's context when the
// attempt returns would cut off the body. Config.Retry.AttemptTimeout is
// the same field unherdgrpc's Config.Retry uses, with the meaning HTTP
// gives an attempt.
//
// # Retry at one layer
//
// Three services that each retry three times send 27 requests to the
// bottom one for every request at the top, at exactly the moment it is
// failing (Google SRE book, chapter 22, "Addressing Cascading Failures",
// https://sre.google/sre-book/addressing-cascading-failures/). With
// [Middleware] on each service and a Transport for each call, the bottom
// service receives 3: the edge's attempts (TestRetryAtOneLayer,
// ExampleMiddleware_layers). A handler whose nested call failed should
// answer 503 or 502, statuses every retrying client treats as transient:
// a 500 is retried by default too, but a caller with Config.NoRetry500
// set (or a client that, like net/http, does not retry a 500) would take
// it as final and end the retries at its layer.
//
// # Shedding and the caller's deadline
//
// A server that takes every request when it is overloaded queues them,
// and answers each one too late. [Shed] refuses a request before its
// handler starts when a limit.Limiter (an adaptive concurrency limit, or
// a fixed one) is full: 503 with Retry-After (1 s by default), which a
// Transport honours as the least wait before its retry, paid from its
// retry budget, so clients back off and the budget bounds what the
// refusals cost. Wrap the whole handler, outside Middleware:
//
//	shed, err := unherdhttp.Shed(unherdhttp.ShedConfig{Limiter: l})
//	http.ListenAndServe(addr, shed(unherdhttp.Middleware(mux)))
//
// A Transport tells the server how long its caller will still wait: every
// attempt of a request whose context has a deadline, or under an attempt
// timeout, carries [TimeoutHeader] (Unherd-Timeout-Ms), the shorter of the
// two in whole milliseconds, rounded down, as gRPC's grpc-timeout does.
// Shed puts that deadline on the handler's context, so a handler that
// honours its context stops when its caller stops waiting, and the calls
// it makes pass on what is left; it refuses a request that arrives with
// no time left, or whose client has gone, with 504 and without running
// the handler. Its own name, not Envoy's x-envoy-expected-rq-timeout-ms:
// Envoy strips x-envoy headers from requests it does not trust, and sets
// that one itself. A request whose context carries a priority other than
// Normal (limit.WithPriority), and no limit.PriorityHeader of its own, is
// sent with that header, which Shed reads by default.
//
// # Cost
//
// A request whose first attempt succeeds, without a deadline, an attempt
// timeout or hedging, is sent as the caller built it: no clone, no
// allocation, no goroutine and no clock read beyond what the base
// transport does. A deadline costs a clock read and a clone of the
// request, with its header, per attempt, for TimeoutHeader. An
// attempt timeout costs a context, a timer and an httptrace hook per
// attempt; a hedged request, the hedger's race and the context through
// which a winning hedge cancels the others. BenchmarkTransportOverhead,
// BenchmarkTransportHedgedOverhead and BenchmarkTransportGet (against a
// bare http.Transport over loopback) measure them; bench/BENCHMARKS.md
// has the figures.
package unherdhttp
