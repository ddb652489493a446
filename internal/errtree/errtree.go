// Package errtree finds values in an error tree without reflection.
//
// errors.As needs a pointer target and reflection, which allocates and is
// slow on the retry loop's hot path. Find walks the same tree (Unwrap()
// error and Unwrap() []error, depth first, pre-order, as errors.As does)
// with a plain type assertion, so it allocates nothing.
package errtree

// Find returns the first error in err's tree whose dynamic type implements
// or is T, and true; or the zero T and false.
func Find[T any](err error) (T, bool) {
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if t, ok := Find[T](e); ok {
					return t, true
				}
			}
			return *new(T), false
		default:
			return *new(T), false
		}
	}
	return *new(T), false
}
