package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidParams is wrapped by every error a Params.Validate returns.
var ErrInvalidParams = errors.New("sim: invalid parameters")

// ParamError is a parameter that cannot work, named as its flag is named.
// Every Params.Validate error is a *ParamError, which wraps
// ErrInvalidParams: a command line prints Flag and Msg under its own
// prefix.
type ParamError struct {
	// Flag is the parameter's flag name, without dashes.
	Flag string
	// Msg says what is wrong with its value and what would be right.
	Msg string
}

// Error returns "sim: invalid parameters: --flag: msg".
func (e *ParamError) Error() string {
	return ErrInvalidParams.Error() + ": --" + e.Flag + ": " + e.Msg
}

// Unwrap returns ErrInvalidParams.
func (e *ParamError) Unwrap() error { return ErrInvalidParams }

// invalid returns an error naming the flag at fault.
func invalid(flag, format string, args ...any) error {
	return &ParamError{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}

// ParseInts reads a comma-separated list of integers, the form of a list
// parameter (a Field whose Value is an *[]int) on a command line or in a
// link, for the parameter named name, which its errors name. Spaces
// around an integer and empty items are ignored; anything else that is
// not an integer, or a list with no integer at all, is an error wrapping
// ErrInvalidParams.
func ParseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, invalid(name, "%q is not an integer", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, invalid(name, "the list %q holds no integer", s)
	}
	return out, nil
}

// FormatInts writes a list as ParseInts reads it.
func FormatInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// checkPositive reports a value that must be above zero.
func checkPositive[T int | float64 | time.Duration](flag string, v T) error {
	if !(v > 0) {
		return invalid(flag, "%v must be above zero", v)
	}
	return nil
}

// checkAtMost reports a size too large to simulate in reasonable memory
// and time.
func checkAtMost(flag string, v, max int) error {
	if v > max {
		return invalid(flag, "%d is above the limit of %d", v, max)
	}
	return nil
}

// checkFraction reports a value outside [0, 1].
func checkFraction(flag string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return invalid(flag, "%v is outside [0, 1]", v)
	}
	return nil
}

// round keeps d decimal places, so tables and golden files stay readable.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
