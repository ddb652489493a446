// Package failure names how an attempt of a call failed: the four classes
// that retry decisions, retry budgets and guards (circuit breakers,
// client-side throttles) all speak.
//
// Most code never imports it: package retry re-exports the type and its
// constants ([failure.Class], failure.Transient and so on), and a classifier
// written for a retry.Config returns those. The classes live here, below
// both retry and budget, because each of those packages needs them and
// neither may import the other's vocabulary without a cycle: retry builds
// and consults budgets, and a budget charges a retry by the class of the
// failure that prompted it. gRPC keeps its status codes in a package of
// their own (google.golang.org/grpc/codes) for the same reason.
//
// [failure.Class]: https://pkg.go.dev/github.com/unherd/unherd/retry#Class
package failure
