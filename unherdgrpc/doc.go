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
// The interceptors retry each call by a retry.Policy: UNAVAILABLE is
// transient, RESOURCE_EXHAUSTED throttled (retried from the schedule's
// throttled base), the attempt's own timeout (retry.Config.AttemptTimeout,
// inside the call's deadline) a retryable timeout, and every other code,
// the caller's cancellation and the caller's deadline are returned at
// once; Config.Codes changes the table. A server's grpc-retry-pushback-ms
// trailer is a floor over the schedule's jittered delay, as Retry-After
// is in package unherdhttp: the wait is at least the pushback and at
// least the schedule's own delay; a negative or malformed pushback ends
// the retries. Retries carry grpc-previous-rpc-attempts. The error of a
// failed call is an [*Error]: status.FromError gives the last attempt's
// status unchanged, and errors.Is reaches the retry loop's reason.
//
// grpc-go's own retries (gRFC A6) are kept off, so that the two never
// multiply: DialOptions includes grpc.WithDisableRetry, and every attempt
// is sent with grpc.MaxRetryRPCBufferSize(0), which makes grpc-go commit
// the attempt as soon as its first message is sent (see [Client]).
//
// This follows gRFC A6, "gRPC Retry Design",
// https://github.com/grpc/proposal/blob/master/A6-client-retries.md, for
// the metadata keys, the commit point and pushback.
package unherdgrpc
