// Package admission is the interface between a call's retry loop and the
// admission control it consults before every attempt: circuit breakers
// (package breaker), client-side throttles and rate limiters (package
// throttle) and concurrency limits (package limit) are Guards, and a
// retry.Config lists them in Guards.
//
// The loop asks each guard, in order, to admit an attempt, and tells each
// admitted guard exactly once how the attempt ended, as an Outcome: its
// error and class, or that it was abandoned (the caller's context ended,
// or a later guard rejected it). A guard's rejection ends the call at
// once with retry.ErrRejected and is never retried.
//
// This package holds only the interface, and depends on package failure
// alone. A guard makes its rejections with engine.NewRejection (package
// retry/engine), so that the loop, and errors.Is against
// retry.ErrRejected, know them for local rejections.
package admission
