// Package errtree walks an error tree without reflection: the one walker
// of the module, which the retry classification and every search for an
// error of a given type share.
//
// errors.Is and errors.As walk a tree once per question, and errors.As
// needs a pointer target and reflection, which allocates; the retry
// decision asks several questions of every failed attempt. Walk visits
// the same nodes in the same order (Unwrap() error and Unwrap() []error,
// depth first, pre-order) once, and lets the visitor answer them all.
package errtree

// Step is what a visitor tells [Walk] to do after visiting a node.
type Step uint8

const (
	// Descend walks what the node wraps next, then goes on.
	Descend Step = iota
	// Skip leaves out what the node wraps (the visitor has walked it
	// itself, or it does not matter) and goes on with the rest.
	Skip
	// Stop ends the walk.
	Stop
)

// Walk calls visit for err and every error it wraps, depth first and
// pre-order as errors.Is and errors.As do, as visit's answers allow. It
// reports whether the walk ran to its end: false if visit stopped it. A
// nil err or a nil error in a list is not visited.
func Walk(err error, visit func(error) Step) bool {
	for err != nil {
		switch visit(err) {
		case Stop:
			return false
		case Skip:
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if !Walk(e, visit) {
					return false
				}
			}
			return true
		default:
			return true
		}
	}
	return true
}

// Find returns the first error in err's tree whose dynamic type implements
// or is T, and true; or the zero T and false.
func Find[T any](err error) (t T, ok bool) {
	Walk(err, func(e error) Step {
		t, ok = e.(T)
		if ok {
			return Stop
		}
		return Descend
	})
	return t, ok
}
