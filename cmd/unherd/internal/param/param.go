// Package param reads and writes a scenario's parameters (sim.Field) as
// text, the one form of the command line's flags and the page's form: an
// integer, a number, a duration ("50ms"), or a list of integers separated
// by commas ("10,20,30").
package param

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/unherd/sim"
)

// Kind names the form of f's value: "int", "float", "duration" or
// "ints".
func Kind(f sim.Field) string {
	switch f.Value.(type) {
	case *int:
		return "int"
	case *float64:
		return "float"
	case *time.Duration:
		return "duration"
	case *[]int:
		return "ints"
	}
	panic(fmt.Sprintf("param: parameter %q holds a %T", f.Name, f.Value))
}

// Text returns f's value as Set reads it.
func Text(f sim.Field) string {
	switch v := f.Value.(type) {
	case *int:
		return strconv.Itoa(*v)
	case *float64:
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case *time.Duration:
		return v.String()
	case *[]int:
		s := make([]string, len(*v))
		for i, n := range *v {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ",")
	}
	panic(fmt.Sprintf("param: parameter %q holds a %T", f.Name, f.Value))
}

// Set parses text, spaces around it ignored, into the parameter f
// points at. An error says what text is not; a list's error is a
// *sim.ParamError naming f.
func Set(f sim.Field, text string) error {
	text = strings.TrimSpace(text)
	switch v := f.Value.(type) {
	case *int:
		n, err := strconv.ParseInt(text, 0, strconv.IntSize)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
		*v = int(n)
	case *float64:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", text)
		}
		*v = n
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%q is not a duration (want e.g. 50ms or 2s)", text)
		}
		*v = d
	case *[]int:
		ns, err := ints(f.Name, text)
		if err != nil {
			return err
		}
		*v = ns
	default:
		return fmt.Errorf("parameter of unknown type %T", f.Value)
	}
	return nil
}

// ints reads a comma-separated list of integers for the parameter named
// name. Spaces around an integer and empty items are ignored; anything
// else that is not an integer, or a list with no integer at all, is a
// *sim.ParamError.
func ints(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, &sim.ParamError{Field: name, Msg: fmt.Sprintf("%q is not an integer", f)}
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, &sim.ParamError{Field: name, Msg: fmt.Sprintf("the list %q holds no integer", s)}
	}
	return out, nil
}

// Flag is f as a flag.Value: its String is Text, its Set is Set.
type Flag sim.Field

// String returns the parameter's value as text; "" for a zero Flag, as
// the flag package asks.
func (p Flag) String() string {
	if p.Value == nil {
		return ""
	}
	return Text(sim.Field(p))
}

// Set parses text into the parameter.
func (p Flag) Set(text string) error { return Set(sim.Field(p), text) }
