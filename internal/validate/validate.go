// Package validate holds the check every configuration's Validate makes
// of its counts and durations: none may be negative, and the error names
// the field, its value and what to use instead.
package validate

import (
	"fmt"
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
