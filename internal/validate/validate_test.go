package validate

import (
	"errors"
	"testing"
	"time"
)

var errInvalid = errors.New("x: invalid")

func TestNonNegative(t *testing.T) {
	ok := NonNegative(errInvalid, Field{Name: "N", Value: 0}, Field{Name: "D", Value: time.Second})
	if ok != nil {
		t.Fatalf("valid fields: %v", ok)
	}
	err := NonNegative(errInvalid, Field{Name: "N", Value: 1}, Field{Name: "D", Value: -time.Second, Hint: "; use 0"},
		Field{Name: "M", Value: -1})
	if !errors.Is(err, errInvalid) || err.Error() != "x: invalid: D -1s is negative; use 0" {
		t.Fatalf("got %v, want the first negative field named, wrapping errInvalid", err)
	}
}
