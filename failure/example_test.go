package failure_test

import (
	"fmt"

	"github.com/unherd/unherd/failure"
)

func ExampleClass() {
	// A classifier maps errors to classes; only Permanent is never retried.
	for _, c := range []failure.Class{failure.Transient, failure.Throttled, failure.Permanent} {
		fmt.Println(c, c != failure.Permanent)
	}
	// Output:
	// transient true
	// throttled true
	// permanent false
}
