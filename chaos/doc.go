// Package chaos injects faults into your own tests: a fault-injecting
// [http.RoundTripper] and a wrapper for any operation, with error rates,
// added latency, HTTP statuses with Retry-After, connection resets, and
// outage or brown-out windows on a schedule. It is for checking that code
// built on unherd (or any other client) behaves when its dependency does
// not, as Polly's chaos strategies are for .NET.
//
// The common case: build an [Injector] and wrap what you call.
//
//	inj, err := chaos.New(chaos.Config{
//		Seed:   1,
//		Faults: chaos.Faults{Latency: chaos.LogNormal(5*time.Millisecond, 0.5)},
//		Phases: []chaos.Phase{
//			// From 10 s to 16 s after New, every request gets a 503.
//			{From: 10 * time.Second, To: 16 * time.Second, Faults: chaos.Faults{StatusRate: 1}},
//		},
//	})
//	client := &http.Client{Transport: inj.Transport(http.DefaultTransport)}
//
// and for a function, [Wrap]:
//
//	get := chaos.Wrap(inj, store.Get)
//
// # What a call gets
//
// Each call draws, in this order, its added latency (Faults.Latency) and
// then at most one fault: an error (ErrorRate), a connection reset
// (ResetRate) or a status (StatusRate, Status, RetryAfter). The latency is
// waited first, honouring the call's context; a fault then replaces the
// call, which never reaches the base transport or the wrapped function;
// without one, the call goes through. The phase whose window holds the
// call's time, if any, replaces the base Faults for that call: an outage
// is a phase with StatusRate (or ErrorRate) 1, a brown-out one with a
// smaller rate or a longer latency.
//
// Every injected error matches [ErrInjected] with errors.Is; a reset also
// matches syscall.ECONNRESET, as a real one from net/http does; an
// injected status is a real *http.Response from the Transport, and a
// [*StatusError] from Wrap, marked for package retry by
// failure.OfHTTPStatus, unherdhttp's table (a 429 or a 503 is throttled,
// a 4xx permanent; a Retry-After becomes a server-directed delay).
//
// # Deterministic
//
// Draws come from a PCG source seeded with Config.Seed, taken under a
// lock: the same seed and the same sequence of calls give the same faults,
// so a failing test fails again. Concurrent callers still share one
// sequence, in the order they reach it. The schedule reads Config.Now
// (time.Now by default; under testing/synctest, virtual time).
package chaos
