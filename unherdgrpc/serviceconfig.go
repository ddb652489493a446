package unherdgrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/hedge"
)

// ErrServiceConfig is wrapped by every error ParseMethodConfig returns:
// the JSON is malformed, breaks gRFC A6's rules, or asks for something
// unherd does not do.
var ErrServiceConfig = errors.New("unherdgrpc: service config does not convert")

// maxA6Attempts is A6's limit on maxAttempts: larger values are treated
// as 5.
const maxA6Attempts = 5

// a6Retry is A6's retryPolicy object, with the perAttemptRecvTimeout of
// its later amendment.
type a6Retry struct {
	MaxAttempts           *int     `json:"maxAttempts"`
	InitialBackoff        *string  `json:"initialBackoff"`
	MaxBackoff            *string  `json:"maxBackoff"`
	BackoffMultiplier     *float64 `json:"backoffMultiplier"`
	RetryableStatusCodes  a6Codes  `json:"retryableStatusCodes"`
	PerAttemptRecvTimeout *string  `json:"perAttemptRecvTimeout"`
}

// a6Codes is a list of status codes as A6 writes them: "in the integer
// form or the case-insensitive string form (eg. [14], ["UNAVAILABLE"] or
// ["unavailable"])".
type a6Codes []codes.Code

// UnmarshalJSON reads each code with codes.Code's own decoder, a string
// in upper case.
func (cs *a6Codes) UnmarshalJSON(js []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return err
	}
	out := make(a6Codes, len(raw))
	for i, r := range raw {
		var name string
		if json.Unmarshal(r, &name) == nil {
			r, _ = json.Marshal(strings.ToUpper(name))
		}
		if err := out[i].UnmarshalJSON(r); err != nil {
			return err
		}
	}
	*cs = out
	return nil
}

// a6Hedging is A6's hedgingPolicy object.
type a6Hedging struct {
	MaxAttempts         *int    `json:"maxAttempts"`
	HedgingDelay        *string `json:"hedgingDelay"`
	NonFatalStatusCodes a6Codes `json:"nonFatalStatusCodes"`
}

// a6Throttling is A6's retryThrottling object.
type a6Throttling struct {
	MaxTokens  *float64 `json:"maxTokens"`
	TokenRatio *float64 `json:"tokenRatio"`
}

// ParseMethodConfig converts the retry settings of a gRPC service config
// (gRFC A6) to a Config, so that a team moving from grpc-go's retries
// keeps its settings: methodConfig is one entry of the service config's
// "methodConfig" list (only its "retryPolicy" or "hedgingPolicy" is read;
// its "name", "timeout" and the rest stay the channel's business), and
// retryThrottling, which may be empty, is the service config's
// "retryThrottling" object.
//
// A retryPolicy becomes Config.Retry:
//
//   - maxAttempts is MaxAttempts; as in A6 it must be at least 2, and
//     values above 5 are treated as 5;
//   - initialBackoff is Backoff.Base and Backoff.ThrottledBase (A6 has no
//     separate base after throttling), maxBackoff is Backoff.Cap;
//   - backoffMultiplier, which A6 requires to be positive, is
//     Backoff.Multiplier (1 is Backoff.Constant, 2 the zero value);
//   - retryableStatusCodes become Codes: the codes listed are retried
//     (RESOURCE_EXHAUSTED as throttled), every other code is permanent;
//   - perAttemptRecvTimeout, if present, is AttemptTimeout.
//
// The delays are drawn with full jitter, uniformly in [0, min(cap,
// initialBackoff*backoffMultiplier^n)], as A6 first specified. A6 changed in 2024 to
// multiply the un-jittered delay by a uniform draw in [0.8, 1.2], which
// grpc-go does now; unherd keeps full jitter, which spreads clients that
// failed together over the whole window instead of a band of ±20%
// around one instant, so a converted policy waits about half as long on
// average and its retries do not arrive in waves.
//
// A hedgingPolicy becomes Config.Hedge, with one attempt per hedge and no
// retries (Retry.MaxAttempts 1), as in A6: maxAttempts, at least 2 and
// treated as 5 above it, counts the original request, so it is
// hedge.Config.MaxHedges+1; a positive hedgingDelay is hedge.Config.Delay,
// and "0s" or none (A6's default) is hedge.Config.NoDelay, every hedge
// sent at once; nonFatalStatusCodes is hedge.Config.NonFatal. The
// hedger's own suspension of hedges that keep losing is off, as A6 has
// none.
//
// retryThrottling becomes a budget.GRPC, A6's own token bucket, shared by
// retries and hedges as in A6, and counting as A6 does: each request a
// converted hedgingPolicy sends, hedges included, that fails with a
// non-fatal status or a pushback that stops hedging costs a token, each
// that succeeds puts tokenRatio back, and the requests that lose the race
// count for nothing. Without it A6 throttles nothing: a
// converted hedgingPolicy sends every hedge it allows (budget.Unlimited),
// and a retryPolicy keeps unherd's default retry budget. A6 applies one
// such bucket to a whole server name; each ParseMethodConfig call makes
// its own, so convert a channel's methods together with
// ParseServiceConfig, which shares one.
//
// Unknown fields, both policies at once, and values A6 forbids are errors
// that wrap ErrServiceConfig and name the field. To convert a whole
// service config, with each method's policy picked by name and one
// throttle for the channel, use ParseServiceConfig.
func ParseMethodConfig(methodConfig, retryThrottling []byte) (Config, error) {
	var mc struct {
		RetryPolicy   json.RawMessage `json:"retryPolicy"`
		HedgingPolicy json.RawMessage `json:"hedgingPolicy"`
	}
	if err := json.Unmarshal(methodConfig, &mc); err != nil {
		return Config{}, fmt.Errorf("%w: methodConfig: %w", ErrServiceConfig, err)
	}
	var b budget.Budget
	if len(bytes.TrimSpace(retryThrottling)) != 0 {
		g, err := parseThrottling(retryThrottling)
		if err != nil {
			return Config{}, err
		}
		b = g
	}
	return convertMethod(mc.RetryPolicy, mc.HedgingPolicy, b)
}

func isSet(m json.RawMessage) bool {
	s := string(bytes.TrimSpace(m))
	return s != "" && s != "null"
}

// strict decodes js into v, refusing unknown fields.
func strict(js []byte, v any, what string) error {
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrServiceConfig, what, err)
	}
	if d.More() {
		return fmt.Errorf("%w: %s: data after the object", ErrServiceConfig, what)
	}
	return nil
}

func parseRetry(js []byte, b budget.Budget) (Config, error) {
	var rp a6Retry
	if err := strict(js, &rp, "retryPolicy"); err != nil {
		return Config{}, err
	}
	attempts, err := a6Attempts(rp.MaxAttempts, "retryPolicy")
	if err != nil {
		return Config{}, err
	}
	initial, err := requiredDuration(rp.InitialBackoff, "retryPolicy.initialBackoff")
	if err != nil {
		return Config{}, err
	}
	maxb, err := requiredDuration(rp.MaxBackoff, "retryPolicy.maxBackoff")
	if err != nil {
		return Config{}, err
	}
	sched := backoff.Schedule{Base: initial, ThrottledBase: initial, Cap: maxb}
	switch m := rp.BackoffMultiplier; {
	case m == nil:
		return Config{}, fmt.Errorf("%w: retryPolicy.backoffMultiplier is required", ErrServiceConfig)
	case !(*m > 0):
		return Config{}, fmt.Errorf("%w: retryPolicy.backoffMultiplier %v must be positive", ErrServiceConfig, *m)
	case *m == 1:
		sched.Constant = true
	case *m != backoff.DefaultMultiplier:
		sched.Multiplier = *m
	}
	if initial > maxb {
		// A6 caps every delay at maxBackoff, the first included.
		sched.Base, sched.ThrottledBase = maxb, maxb
	}
	if len(rp.RetryableStatusCodes) == 0 {
		return Config{}, fmt.Errorf("%w: retryPolicy.retryableStatusCodes must list at least one code", ErrServiceConfig)
	}
	for _, c := range rp.RetryableStatusCodes {
		if c == codes.OK {
			return Config{}, fmt.Errorf("%w: retryPolicy.retryableStatusCodes lists OK, which is no failure", ErrServiceConfig)
		}
	}
	cfg := Config{Codes: codeTable(rp.RetryableStatusCodes)}
	cfg.Retry.MaxAttempts = attempts
	cfg.Retry.Backoff = sched
	cfg.Retry.Budget = b
	if rp.PerAttemptRecvTimeout != nil {
		d, err := requiredDuration(rp.PerAttemptRecvTimeout, "retryPolicy.perAttemptRecvTimeout")
		if err != nil {
			return Config{}, err
		}
		cfg.Retry.AttemptTimeout = d
	}
	return cfg, nil
}

// codeTable classifies every code: those listed are retried (throttled
// for RESOURCE_EXHAUSTED), the rest are permanent.
func codeTable(retryable []codes.Code) map[codes.Code]failure.Class {
	t := make(map[codes.Code]failure.Class, 17)
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		t[c] = failure.Permanent
	}
	for _, c := range retryable {
		if c == codes.ResourceExhausted {
			t[c] = failure.Throttled
		} else {
			t[c] = failure.Transient
		}
	}
	return t
}

func parseHedging(js []byte, b budget.Budget) (Config, error) {
	var hp a6Hedging
	if err := strict(js, &hp, "hedgingPolicy"); err != nil {
		return Config{}, err
	}
	attempts, err := a6Attempts(hp.MaxAttempts, "hedgingPolicy")
	if err != nil {
		return Config{}, err
	}
	// A6: hedgingDelay defaults to 0, every hedge sent at once.
	var delay time.Duration
	if hp.HedgingDelay != nil {
		if delay, err = parseProtoDuration(*hp.HedgingDelay); err != nil {
			return Config{}, fmt.Errorf("%w: hedgingPolicy.hedgingDelay: %w", ErrServiceConfig, err)
		}
		if delay < 0 {
			return Config{}, fmt.Errorf("%w: hedgingPolicy.hedgingDelay %q is negative", ErrServiceConfig, *hp.HedgingDelay)
		}
	}
	// A6 has no rule that suspends hedges which keep losing: only
	// maxAttempts, hedgingDelay and the throttle decide.
	hc := hedge.Config{Delay: delay, NoDelay: delay == 0, MaxHedges: attempts - 1, MinWinShare: -1}
	// A6: a status not in nonFatalStatusCodes (all of them when the list
	// is empty) ends the call at once and cancels the outstanding hedges.
	nonFatal := make(map[codes.Code]bool, len(hp.NonFatalStatusCodes))
	for _, c := range hp.NonFatalStatusCodes {
		nonFatal[c] = true
	}
	hc.NonFatal = func(err error) bool { return nonFatal[status.Code(err)] }
	h, err := hedge.New(hc)
	if err != nil {
		return Config{}, fmt.Errorf("%w: hedgingPolicy: %w", ErrServiceConfig, err)
	}
	// The hedges are copies of the retry policy's one attempt, paid for
	// by its budget (hedge.DoAttempt).
	cfg := Config{Hedge: h}
	cfg.Retry.MaxAttempts = 1
	if b != nil {
		// Each hedge asks the throttle, and the interceptor records every
		// request as A6 counts them (a6Accounting), where the engine would
		// record each call once and each hedge as a copy.
		cfg.Retry.Budget = a6Hedges{b}
		cfg.a6 = &a6Accounting{throttle: b, nonFatal: nonFatal}
	} else {
		// A6 throttles hedges only through retryThrottling: without it
		// every hedge the policy allows is sent.
		//unherdvet:ignore misuse gRPC A6 hedging throttles only through retryThrottling; without it every hedge the service config allows is sent
		cfg.Retry.Budget = budget.Unlimited
	}
	return cfg, nil
}

func parseThrottling(js []byte) (*budget.GRPC, error) {
	var rt a6Throttling
	if err := strict(js, &rt, "retryThrottling"); err != nil {
		return nil, err
	}
	switch {
	case rt.MaxTokens == nil:
		return nil, fmt.Errorf("%w: retryThrottling.maxTokens is required", ErrServiceConfig)
	case rt.TokenRatio == nil:
		return nil, fmt.Errorf("%w: retryThrottling.tokenRatio is required", ErrServiceConfig)
	case *rt.MaxTokens <= 0 || *rt.MaxTokens > budget.MaxGRPCTokens:
		return nil, fmt.Errorf("%w: retryThrottling.maxTokens %v is outside (0, 1000]", ErrServiceConfig, *rt.MaxTokens)
	case *rt.TokenRatio <= 0:
		return nil, fmt.Errorf("%w: retryThrottling.tokenRatio %v must be positive", ErrServiceConfig, *rt.TokenRatio)
	}
	g, err := budget.NewGRPC(budget.GRPCConfig{MaxTokens: *rt.MaxTokens, TokenRatio: *rt.TokenRatio})
	if err != nil {
		return nil, fmt.Errorf("%w: retryThrottling: %w", ErrServiceConfig, err)
	}
	return g, nil
}

// a6Attempts checks maxAttempts: required, at least 2, and above 5 read
// as 5.
func a6Attempts(n *int, what string) (int, error) {
	switch {
	case n == nil:
		return 0, fmt.Errorf("%w: %s.maxAttempts is required", ErrServiceConfig, what)
	case *n < 2:
		return 0, fmt.Errorf("%w: %s.maxAttempts %d must be at least 2", ErrServiceConfig, what, *n)
	}
	return min(*n, maxA6Attempts), nil
}

// requiredDuration parses a JSON-encoded google.protobuf.Duration ("0.1s"):
// decimal seconds, up to nine fractional digits, with an "s" suffix; it
// must be positive.
func requiredDuration(s *string, what string) (time.Duration, error) {
	if s == nil {
		return 0, fmt.Errorf("%w: %s is required", ErrServiceConfig, what)
	}
	d, err := parseProtoDuration(*s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrServiceConfig, what, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %s %q must be positive", ErrServiceConfig, what, *s)
	}
	return d, nil
}

// parseProtoDuration parses the JSON form of google.protobuf.Duration.
func parseProtoDuration(s string) (time.Duration, error) {
	num, ok := strings.CutSuffix(s, "s")
	if !ok || num == "" {
		return 0, fmt.Errorf("duration %q is not decimal seconds ending in \"s\"", s)
	}
	whole, frac, _ := strings.Cut(strings.TrimPrefix(num, "-"), ".")
	if whole == "" && frac == "" || !digits(whole) || !digits(frac) || len(frac) > 9 {
		return 0, fmt.Errorf("duration %q is not decimal seconds ending in \"s\"", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// digits reports whether every byte of s is an ASCII decimal digit (true
// for the empty string). parseProtoDuration checks the number with it
// before time.ParseDuration, which would also take units and signs
// inside it.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// a6Hedges is the retry policy's budget for a converted hedgingPolicy
// under retryThrottling: each hedge asks the throttle (A6: no hedge while
// the token count is at or below its threshold), and nothing is recorded
// here: a6Accounting records every request as A6 counts it.
type a6Hedges struct{ throttle budget.Budget }

func (a a6Hedges) Withdraw(c failure.Class) bool { return a.throttle.Withdraw(c) }
func (a6Hedges) Record(budget.Attempt)           {}

// a6Accounting records the requests of a converted hedgingPolicy with
// the retry throttle one by one, as A6 counts them: "Every failed RPC
// will decrement the token_count by 1. Every successful RPC will
// increment the token_count by tokenRatio", where only a non-fatal status
// or a pushback that says not to retry counts as a failure.
type a6Accounting struct {
	throttle budget.Budget
	nonFatal map[codes.Code]bool
}

// request records one request's outcome: err is its error (nil for a
// success), stop whether its pushback said not to retry. A request that
// lost the race, or that the caller cancelled, is not passed here.
func (a *a6Accounting) request(err error, stop bool) {
	switch {
	case a == nil:
	case err == nil:
		a.throttle.Record(budget.Attempt{N: 1})
	case stop || a.nonFatal[status.Code(err)]:
		a.throttle.Record(budget.Attempt{N: 1, Failed: true, Class: failure.Transient})
	}
}
