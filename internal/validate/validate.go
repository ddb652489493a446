// Package validate holds the check every configuration's Validate makes
// of its counts and durations: none may be negative, and the error names
// the field, its value and what to use instead. It also parses the
// durations that configurations decoded from JSON or YAML write in
// google.protobuf.Duration's form ("0.25s"), for unherdgrpc's service
// config and unherdmesh's decoders alike.
package validate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Field is one setting that must not be negative: its name as the user
// writes it, its value (an int or a time.Duration), and a hint appended
// to the error ("; use 0 for the default", or empty).
type Field struct {
	Name  string
	Value any
	Hint  string
}

// NonNegative returns an error wrapping invalid, "<invalid>: <Name>
// <Value> is negative<Hint>", for the first of fields whose value is
// negative, or nil if none is.
func NonNegative(invalid error, fields ...Field) error {
	for _, f := range fields {
		if negative(f.Value) {
			return fmt.Errorf("%w: %s %v is negative%s", invalid, f.Name, f.Value, f.Hint)
		}
	}
	return nil
}

func negative(v any) bool {
	switch v := v.(type) {
	case int:
		return v < 0
	case int64:
		return v < 0
	case time.Duration:
		return v < 0
	}
	panic(fmt.Sprintf("validate: a Field's value is a %T, not an int, an int64 or a time.Duration", v))
}

// ErrDurationSyntax is wrapped by ProtoDuration's error for a string that is not decimal
// seconds ending in "s".
var ErrDurationSyntax = errors.New(`not decimal seconds ending in "s" (such as "0.25s")`)

// ProtoDuration parses s, the JSON form of google.protobuf.Duration (as
// gRPC service configs and Envoy's configuration write durations): decimal seconds with up to nine fractional digits, an
// optional leading minus sign and an "s" suffix: "2s", "0.25s", "-1.5s".
// It refuses what time.ParseDuration alone would take beyond that form
// (other units, a sign or an exponent inside the number), and a value
// out of a Duration's range.
func ProtoDuration(s string) (time.Duration, error) {
	num, ok := strings.CutSuffix(s, "s")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(num, "-"), ".")
	if !ok || whole == "" && frac == "" || !digits(whole) || !digits(frac) || len(frac) > 9 {
		return 0, fmt.Errorf("%q is %w", s, ErrDurationSyntax)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return d, nil
}

// digits reports whether every byte of s is an ASCII decimal digit (true
// for the empty string).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
