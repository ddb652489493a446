// Package configtest checks the validation of a configuration, the same
// table test for every package whose constructor validates a Config.
package configtest

import (
	"errors"
	"testing"
)

// Case is one configuration to validate, named, and whether it is valid;
// make one with [Row].
type Case[C any] struct {
	name string
	cfg  C
	ok   bool
}

// Row returns the case of configuration cfg, named name, valid if ok.
func Row[C any](name string, cfg C, ok bool) Case[C] { return Case[C]{name, cfg, ok} }

// Check runs build on each case's configuration as a subtest: it must
// succeed for a valid one, and fail for an invalid one with an error
// that wraps invalid (the package's ErrInvalidConfig).
func Check[C any](t *testing.T, invalid error, build func(C) error, cases []Case[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := build(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, invalid) {
				t.Fatalf("error %v does not wrap %v", err, invalid)
			}
		})
	}
}

// New adapts a constructor to Check's build.
func New[C, V any](newFn func(C) (V, error)) func(C) error {
	return func(c C) error {
		_, err := newFn(c)
		return err
	}
}

// Must hands a test what a constructor returned: the function it returns
// fails t if err is set, and otherwise returns v.
//
//	p := configtest.Must(retry.New(cfg))(t)
func Must[V any](v V, err error) func(testing.TB) V {
	return func(t testing.TB) V {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
