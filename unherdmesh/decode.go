package unherdmesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
)

// ErrConfig is wrapped by every error a converter returns: the YAML or
// JSON is malformed, breaks its source's rules, or asks for something
// unherd does not do. The message names the field.
var ErrConfig = errors.New("unherdmesh: retry settings do not convert")

// maxInput bounds the YAML or JSON a converter reads. Mesh objects are a
// few hundred bytes; a bound keeps a hostile document from costing
// unbounded memory in the YAML decoder.
const maxInput = 1 << 20

// decode reads src, YAML or JSON, into v, refusing unknown fields; what
// names the object in errors.
func decode(src []byte, v any, what string) error {
	js, err := toJSON(src, what)
	if err != nil {
		return err
	}
	return strict(js, v, what)
}

// toJSON turns YAML (of which JSON is a subset) into JSON.
func toJSON(src []byte, what string) ([]byte, error) {
	if len(src) > maxInput {
		return nil, fmt.Errorf("%w: %s: document of %d bytes is over the limit of %d", ErrConfig, what, len(src), maxInput)
	}
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
	}
	return js, nil
}

// strict decodes the JSON js into v, refusing unknown fields; what names
// the object in errors.
func strict(js []byte, v any, what string) error {
	if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
	}
	return nil
}

// isSet reports whether a raw JSON value is present and not null.
func isSet(m json.RawMessage) bool {
	s := string(bytes.TrimSpace(m))
	return s != "" && s != "null"
}

// protoDuration parses the JSON form of google.protobuf.Duration, as
// Envoy's YAML writes durations ("0.25s", "2s"): decimal seconds with
// up to nine fractional digits and an "s" suffix.
func protoDuration(s, what string) (time.Duration, error) {
	num, ok := strings.CutSuffix(s, "s")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(num, "-"), ".")
	if !ok || whole == "" && frac == "" || !digits(whole) || !digits(frac) || len(frac) > 9 {
		return 0, fmt.Errorf("%w: %s %q is not decimal seconds ending in \"s\" (such as \"0.25s\")", ErrConfig, what, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q: %w", ErrConfig, what, s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %s %q must be positive", ErrConfig, what, s)
	}
	return d, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// gep2257 is the Gateway API's duration format (GEP-2257), which
// Linkerd's annotations use too: one to four groups of up to five digits
// and a unit of h, m, s or ms.
var gep2257 = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// gatewayDuration parses a GEP-2257 duration ("100ms", "1m30s"); zero
// is allowed only when zeroOK.
func gatewayDuration(s, what string, zeroOK bool) (time.Duration, error) {
	if !gep2257.MatchString(s) {
		return 0, fmt.Errorf("%w: %s %q is not a Gateway API duration (GEP-2257: such as \"100ms\" or \"1m30s\")", ErrConfig, what, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q: %w", ErrConfig, what, s, err)
	}
	if d == 0 && !zeroOK {
		return 0, fmt.Errorf("%w: %s %q must be positive", ErrConfig, what, s)
	}
	return d, nil
}

// dialFailed reports whether err proves that the request never left: the
// connection could not be made. It is unherdhttp's own test for a
// request that was never sent (a *net.OpError from the dial), which
// decides there whether a POST may be repeated.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// outcome is how a converted rule sees an attempt's transport error.
type outcome uint8

const (
	connectFailure outcome = iota // the connection could not be made
	attemptTimeout                // the attempt's own timeout expired
	otherError                    // reset, disconnect, a read error: the request may have been seen
)

func outcomeOf(err error) outcome {
	switch {
	case dialFailed(err):
		return connectFailure
	case errors.Is(err, retry.ErrAttemptTimeout):
		return attemptTimeout
	}
	return otherError
}

// rule is a converted retry condition: which responses and which
// transport errors are retried.
type rule struct {
	status func(resp *http.Response) bool
	err    func(o outcome) bool
}

// classify turns the rule into unherdhttp.Config.Classify: a response or
// an error the rule retries is a failure of its usual class (a 429 or a
// 503 throttled, a timeout a timeout, the rest transient); a failure
// status or an error it does not retry is Permanent, so the Transport
// returns it at once; a response below 400 that the rule does not name
// is left to the default rules (it is no failure).
func (r rule) classify(resp *http.Response, err error) (failure.Class, bool) {
	if resp != nil {
		if r.status(resp) {
			if c, failed := failure.OfHTTPStatus(resp.StatusCode); failed && c != failure.Permanent {
				return c, true
			}
			return failure.Transient, true
		}
		if resp.StatusCode >= 400 {
			return failure.Permanent, true
		}
		return failure.Transient, false
	}
	o := outcomeOf(err)
	if !r.err(o) {
		return failure.Permanent, true
	}
	if o == attemptTimeout {
		return failure.Timeout, true
	}
	return failure.Transient, true
}

// codeRange is an inclusive range of status codes.
type codeRange struct{ lo, hi int }

// statuses is a set of status codes as ranges.
type statuses []codeRange

func (s statuses) has(code int) bool {
	for _, r := range s {
		if r.lo <= code && code <= r.hi {
			return true
		}
	}
	return false
}
