// Package protodur parses the JSON form of google.protobuf.Duration, as
// gRPC service configs and Envoy's configuration write durations
// ("0.25s", "2s"): the one parser behind unherdgrpc's service config and
// unherdmesh's Envoy and Istio decoders.
package protodur

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrSyntax is wrapped by Parse's error for a string that is not decimal
// seconds ending in "s".
var ErrSyntax = errors.New(`not decimal seconds ending in "s" (such as "0.25s")`)

// Parse parses s, decimal seconds with up to nine fractional digits, an
// optional leading minus sign and an "s" suffix: "2s", "0.25s", "-1.5s".
// It refuses what time.ParseDuration alone would take beyond that form
// (other units, a sign or an exponent inside the number), and a value
// out of a Duration's range.
func Parse(s string) (time.Duration, error) {
	num, ok := strings.CutSuffix(s, "s")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(num, "-"), ".")
	if !ok || whole == "" && frac == "" || !digits(whole) || !digits(frac) || len(frac) > 9 {
		return 0, fmt.Errorf("%q is %w", s, ErrSyntax)
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
