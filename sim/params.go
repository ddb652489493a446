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

// intList is a comma-separated list of integers as a flag.Value, bound to
// the list at v and to the flag it is registered as, which its errors
// name.
type intList struct {
	flag string
	v    *[]int
}

func (l *intList) String() string {
	if l == nil || l.v == nil {
		return ""
	}
	s := make([]string, len(*l.v))
	for i, v := range *l.v {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set replaces the list with the integers in s. Spaces around an integer
// and empty items are ignored; anything else that is not an integer, or a
// list with no integer at all, is an error wrapping ErrInvalidParams. The
// list is left as it was on error.
func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return invalid(l.flag, "%q is not an integer", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return invalid(l.flag, "the list %q holds no integer", s)
	}
	*l.v = out
	return nil
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
