package sim

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidParams is wrapped by every error about a setting the
// simulator refuses: a scenario's parameter or a Policy's (see ParamError).
var ErrInvalidParams = errors.New("sim: invalid parameters")

// ParamError is a setting the simulator refuses: a scenario's parameter
// (from Params.Validate, Scenario.Run or TippingPoints) or a Policy's
// setting (from Policy.Validate, ValidateFor, WhatIf,
// PolicyParams.SetPolicy). It wraps ErrInvalidParams. A command line
// prints Field and Msg under its own prefix, or maps Field to the line
// of a policy file that set it.
type ParamError struct {
	// Policy is the Name of the policy at fault ("yours" if it has none);
	// empty for a scenario's parameter.
	Policy string
	// Field names the setting: a scenario's parameter as its Field.Name
	// (its flag, without dashes), or a policy's as the Policy type
	// spells it ("Retry.MaxAttempts", "Retry.AttemptTimeout", "Budget",
	// "BudgetRatio", "Retry.Backoff", ...).
	Field string
	// Msg says what is wrong with its value and what would be right.
	Msg string
}

// Error returns "sim: invalid parameters: --field: msg" for a scenario's
// parameter, and "sim: invalid parameters: policy "name": Field: msg" for
// a policy's setting.
func (e *ParamError) Error() string {
	if e.Policy != "" {
		return fmt.Sprintf("%v: policy %q: %s: %s", ErrInvalidParams, e.Policy, e.Field, e.Msg)
	}
	return ErrInvalidParams.Error() + ": --" + e.Field + ": " + e.Msg
}

// Unwrap returns ErrInvalidParams.
func (e *ParamError) Unwrap() error { return ErrInvalidParams }

// invalid returns an error naming the flag at fault.
func invalid(flag, format string, args ...any) error {
	return &ParamError{Field: flag, Msg: fmt.Sprintf(format, args...)}
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
func checkAtMost[T int | float64 | time.Duration](flag string, v T, max int) error {
	if float64(v) > float64(max) {
		return invalid(flag, "%v is above the limit of %d", v, max)
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

// fieldsOf lists the fields of the struct p points at that carry a param
// tag, in their order, as Params.Fields does: the tag is the Field's
// Name, the usage tag its Usage, and Value points at the field.
func fieldsOf(p any) []Field {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	var fs []Field
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := f.Tag.Lookup("param"); ok {
			fs = append(fs, Field{Name: name, Usage: f.Tag.Get("usage"), Value: v.Field(i).Addr().Interface()})
		}
	}
	return fs
}

// checkFields checks the fields of the struct p points at against their
// check tags, in field order, and returns the first that fails, named by
// its param tag. A check tag lists, comma-separated: "positive" (above
// zero), "max=N" (at most N, a size too large to simulate in reasonable
// memory and time) and "fraction" (within [0, 1]). A list (a []int) must
// not be empty, and each of its items is checked.
func checkFields(p any) error {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		rules, ok := f.Tag.Lookup("check")
		if !ok {
			continue
		}
		name := f.Tag.Get("param")
		var err error
		switch x := v.Field(i).Addr().Interface().(type) {
		case *int:
			err = checkValue(name, rules, *x)
		case *float64:
			err = checkValue(name, rules, *x)
		case *time.Duration:
			err = checkValue(name, rules, *x)
		case *[]int:
			if len(*x) == 0 {
				return invalid(name, "the list is empty")
			}
			for _, item := range *x {
				if err = checkValue(name, rules, item); err != nil {
					break
				}
			}
		default:
			panic(fmt.Sprintf("sim: field %s holds a %T; want an int, float64, time.Duration or []int", f.Name, x))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkValue checks v against the rules of a check tag.
func checkValue[T int | float64 | time.Duration](name, rules string, v T) error {
	for _, r := range strings.Split(rules, ",") {
		var err error
		switch max, isMax := strings.CutPrefix(r, "max="); {
		case r == "positive":
			err = checkPositive(name, v)
		case r == "fraction":
			err = checkFraction(name, float64(v))
		case isMax:
			n, perr := strconv.Atoi(max)
			if perr != nil {
				panic(fmt.Sprintf("sim: check tag of %s: %q is not a whole number", name, max))
			}
			err = checkAtMost(name, v, n)
		default:
			panic(fmt.Sprintf("sim: check tag of %s: unknown rule %q", name, r))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
