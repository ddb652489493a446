package unherdmesh

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/unherdhttp"
)

// Linkerd's documented defaults: the retry budget of a ServiceProfile
// (20% plus 10 retries per second, over 10 s) and the limit of its retry
// annotations.
const (
	linkerdRetryRatio   = 0.2
	linkerdMinPerSecond = 10
	linkerdTTL          = 10 * time.Second
	linkerdRetryLimit   = 1
	// profileAttempts bounds the attempts of a retryable route; Linkerd
	// bounds them by the budget alone (see CONFORMANCE.md).
	profileAttempts = 3
)

// ServiceProfile is a Linkerd ServiceProfile (linkerd.io/v1alpha2)
// converted to unherd: one RoutePolicy per route, in the profile's order,
// sharing one retry budget, the profile's retryBudget. It is safe for
// concurrent use.
type ServiceProfile struct {
	routes []RoutePolicy
	budget *budget.Ratio
}

// RoutePolicy is one route of a ServiceProfile.
type RoutePolicy struct {
	// Name is the route's name.
	Name string
	// Config retries the route's requests: a route with isRetryable
	// retries the responses its responseClasses call failures (every
	// 5xx when it has none) up to 3 attempts, drawing on the profile's
	// budget; any other route makes one attempt (Retry.MaxAttempts 1).
	Config unherdhttp.Config
	// Timeout is the route's timeout, which bounds the whole request,
	// retries included; zero when the route sets none. unherdhttp.Config
	// has no such bound: ServiceProfile.Transport applies it, or set it
	// as the request context's deadline.
	Timeout time.Duration

	match func(*http.Request) bool
}

// Routes returns the profile's routes, in its order.
func (p *ServiceProfile) Routes() []RoutePolicy { return append([]RoutePolicy(nil), p.routes...) }

// Budget returns the retry budget the profile's routes share.
func (p *ServiceProfile) Budget() *budget.Ratio { return p.budget }

// Route returns the first route whose condition matches the request, as
// Linkerd picks one, and true; or false when none does (Linkerd's
// default route, which does not retry).
func (p *ServiceProfile) Route(r *http.Request) (RoutePolicy, bool) {
	for _, rt := range p.routes {
		if rt.match(r) {
			return rt, true
		}
	}
	return RoutePolicy{}, false
}

type linkerdProfile struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata"`
	Spec       struct {
		Routes []struct {
			Name            string          `json:"name"`
			Condition       *requestMatch   `json:"condition"`
			ResponseClasses []responseClass `json:"responseClasses"`
			IsRetryable     bool            `json:"isRetryable"`
			Timeout         *string         `json:"timeout"`
		} `json:"routes"`
		RetryBudget *struct {
			RetryRatio          *float64 `json:"retryRatio"`
			MinRetriesPerSecond *uint32  `json:"minRetriesPerSecond"`
			TTL                 *string  `json:"ttl"`
		} `json:"retryBudget"`
		DstOverrides json.RawMessage `json:"dstOverrides"`
		OpaquePorts  json.RawMessage `json:"opaquePorts"`
	} `json:"spec"`
}

type requestMatch struct {
	PathRegex *string        `json:"pathRegex"`
	Method    *string        `json:"method"`
	All       []requestMatch `json:"all"`
	Any       []requestMatch `json:"any"`
	Not       *requestMatch  `json:"not"`
}

type responseClass struct {
	Condition *responseMatch `json:"condition"`
	IsFailure bool           `json:"isFailure"`
}

type responseMatch struct {
	Status *struct {
		Min *int `json:"min"`
		Max *int `json:"max"`
	} `json:"status"`
	All []responseMatch `json:"all"`
	Any []responseMatch `json:"any"`
	Not *responseMatch  `json:"not"`
}

// ParseServiceProfile converts a Linkerd ServiceProfile (the resource,
// or only its spec under "spec:", in YAML or JSON) to unherd.
//
// spec.retryBudget becomes one budget.Ratio for the whole profile:
// retryRatio (default 0.2) is RatioConfig.Ratio, minRetriesPerSecond
// (default 10; 0 for none) is MinPerSecond, and ttl (default 10s) is
// Window. A profile without retryBudget has Linkerd's default budget.
//
// Each route becomes a RoutePolicy: its condition (pathRegex, matched
// against the whole path, method, all, any, not) picks it (Route, and
// Transport, which sends each request by its route's policy), and
// when isRetryable is true its responseClasses decide which responses
// are retried: the first class whose condition matches the status says
// whether the response failed, and a response no class matches failed if
// it is a 5xx, as in Linkerd. Transport errors follow unherdhttp's own
// rules. timeout is RoutePolicy.Timeout.
//
// Unknown fields, a condition with no field or a regular expression that
// does not compile, and values Linkerd refuses are errors that wrap
// ErrConfig and name the route and field; so are dstOverrides (traffic
// splitting is not unherd's) and opaquePorts. CONFORMANCE.md lists the
// departures, chief among them that a retryable route makes at most 3
// attempts, where Linkerd retries for as long as the budget allows.
func ParseServiceProfile(profile []byte) (*ServiceProfile, error) {
	var sp linkerdProfile
	if err := decode(profile, &sp, "ServiceProfile"); err != nil {
		return nil, err
	}
	if sp.Kind != "" && sp.Kind != "ServiceProfile" || sp.APIVersion != "" && !strings.HasPrefix(sp.APIVersion, "linkerd.io/") {
		return nil, fmt.Errorf("%w: ServiceProfile: %s %s is not a Linkerd ServiceProfile", ErrConfig, sp.APIVersion, sp.Kind)
	}
	if isSet(sp.Spec.DstOverrides) {
		return nil, fmt.Errorf("%w: spec.dstOverrides is not supported: traffic splitting is the balancer's business", ErrConfig)
	}
	if isSet(sp.Spec.OpaquePorts) {
		return nil, fmt.Errorf("%w: spec.opaquePorts is not supported: it is no retry setting", ErrConfig)
	}
	rc := budget.RatioConfig{Ratio: linkerdRetryRatio, MinPerSecond: linkerdMinPerSecond, Window: linkerdTTL}
	if rb := sp.Spec.RetryBudget; rb != nil {
		if r := rb.RetryRatio; r != nil {
			if !(*r > 0) || math.IsInf(*r, 0) {
				return nil, fmt.Errorf("%w: spec.retryBudget.retryRatio %v must be positive and finite", ErrConfig, *r)
			}
			rc.Ratio = *r
		}
		if m := rb.MinRetriesPerSecond; m != nil {
			rc.MinPerSecond = float64(*m)
			rc.NoFloor = *m == 0
		}
		if t := rb.TTL; t != nil {
			d, err := time.ParseDuration(*t)
			if err != nil || d < time.Millisecond {
				return nil, fmt.Errorf("%w: spec.retryBudget.ttl %q is not a duration of at least 1ms", ErrConfig, *t)
			}
			rc.Window = d
		}
	}
	b, err := budget.NewRatio(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.retryBudget: %w", ErrConfig, err)
	}
	p := &ServiceProfile{budget: b}
	for i, rt := range sp.Spec.Routes {
		what := fmt.Sprintf("spec.routes[%d] (%s)", i, rt.Name)
		if rt.Condition == nil {
			return nil, fmt.Errorf("%w: %s.condition is required", ErrConfig, what)
		}
		match, err := rt.Condition.compile(what + ".condition")
		if err != nil {
			return nil, err
		}
		rp := RoutePolicy{Name: rt.Name, match: match}
		if rt.Timeout != nil {
			d, err := time.ParseDuration(*rt.Timeout)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%w: %s.timeout %q is not a positive duration", ErrConfig, what, *rt.Timeout)
			}
			rp.Timeout = d
		}
		failed, err := compileClasses(rt.ResponseClasses, what+".responseClasses")
		if err != nil {
			return nil, err
		}
		rp.Config.Retry.MaxAttempts = 1
		if rt.IsRetryable {
			rp.Config.Retry.MaxAttempts = profileAttempts
			rp.Config.Retry.Budget = b
			rp.Config.Classify = func(resp *http.Response, err error) (c failure.Class, ok bool) {
				if resp == nil {
					return c, false // transport errors: unherdhttp's rules
				}
				return rule{status: func(r *http.Response) bool { return failed(r.StatusCode) }}.classify(resp, nil)
			}
		}
		p.routes = append(p.routes, rp)
	}
	return p, nil
}

// compile returns the request match as a predicate. Linkerd requires
// exactly one field; several are read as all of them, as its docs say.
func (m *requestMatch) compile(what string) (func(*http.Request) bool, error) {
	var preds []func(*http.Request) bool
	if m.PathRegex != nil {
		re, err := regexp.Compile(`^(?:` + *m.PathRegex + `)$`)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.pathRegex: %w", ErrConfig, what, err)
		}
		preds = append(preds, func(r *http.Request) bool { return re.MatchString(r.URL.Path) })
	}
	if m.Method != nil {
		method := strings.ToUpper(*m.Method)
		preds = append(preds, func(r *http.Request) bool {
			rm := r.Method
			if rm == "" {
				rm = http.MethodGet
			}
			return rm == method
		})
	}
	return combine(preds, m.All, m.Any, m.Not, what, "pathRegex, method, all, any, not", (*requestMatch).compile)
}

// compileClasses returns whether a status failed, by the first class
// that matches it, else by Linkerd's default (a 5xx failed).
func compileClasses(cs []responseClass, what string) (func(code int) bool, error) {
	type class struct {
		match  func(int) bool
		failed bool
	}
	classes := make([]class, len(cs))
	for i, c := range cs {
		w := fmt.Sprintf("%s[%d].condition", what, i)
		if c.Condition == nil {
			return nil, fmt.Errorf("%w: %s is required", ErrConfig, w)
		}
		m, err := c.Condition.compile(w)
		if err != nil {
			return nil, err
		}
		classes[i] = class{m, c.IsFailure}
	}
	return func(code int) bool {
		for _, c := range classes {
			if c.match(code) {
				return c.failed
			}
		}
		return code >= 500 && code <= 599
	}, nil
}

func (m *responseMatch) compile(what string) (func(int) bool, error) {
	var preds []func(int) bool
	if s := m.Status; s != nil {
		lo, hi := 100, 599
		switch {
		case s.Min == nil && s.Max == nil:
			return nil, fmt.Errorf("%w: %s.status sets neither min nor max", ErrConfig, what)
		case s.Min != nil && s.Max != nil:
			lo, hi = *s.Min, *s.Max
		case s.Min != nil: // only one of them: just that status
			lo, hi = *s.Min, *s.Min
		default:
			lo, hi = *s.Max, *s.Max
		}
		if lo < 100 || hi > 599 || lo > hi {
			return nil, fmt.Errorf("%w: %s.status [%d, %d] is not a range of statuses within 100 to 599", ErrConfig, what, lo, hi)
		}
		preds = append(preds, func(c int) bool { return lo <= c && c <= hi })
	}
	return combine(preds, m.All, m.Any, m.Not, what, "status, all, any, not", (*responseMatch).compile)
}

// combine compiles the all, any and not fields of a Linkerd match (those
// that are set; the lists' matches named what.all[i] and what.any[i])
// with compile, and returns the predicate that holds when preds, the
// match's own fields, and those all hold: every one of all, one of any,
// not not. A match that sets none of them (fields, for the error) is an
// error.
func combine[M, T any](preds []func(T) bool, all, some []M, not *M, what, fields string, compile func(*M, string) (func(T) bool, error)) (func(T) bool, error) {
	each := func(ms []M, what string) ([]func(T) bool, error) {
		out := make([]func(T) bool, len(ms))
		for i := range ms {
			f, err := compile(&ms[i], fmt.Sprintf("%s[%d]", what, i))
			if err != nil {
				return nil, err
			}
			out[i] = f
		}
		return out, nil
	}
	if all != nil {
		subs, err := each(all, what+".all")
		if err != nil {
			return nil, err
		}
		preds = append(preds, allOf(subs))
	}
	if some != nil {
		subs, err := each(some, what+".any")
		if err != nil {
			return nil, err
		}
		preds = append(preds, func(v T) bool {
			for _, s := range subs {
				if s(v) {
					return true
				}
			}
			return false
		})
	}
	if not != nil {
		sub, err := compile(not, what+".not")
		if err != nil {
			return nil, err
		}
		preds = append(preds, func(v T) bool { return !sub(v) })
	}
	if len(preds) == 0 {
		return nil, fmt.Errorf("%w: %s sets none of %s", ErrConfig, what, fields)
	}
	return allOf(preds), nil
}

// allOf holds when every one of preds does.
func allOf[T any](preds []func(T) bool) func(T) bool {
	return func(v T) bool {
		for _, p := range preds {
			if !p(v) {
				return false
			}
		}
		return true
	}
}

// Linkerd's retry annotations (Linkerd 2.16 and later), on a Service, an
// HTTPRoute or a GRPCRoute.
const (
	annotationHTTP    = "retry.linkerd.io/http"
	annotationGRPC    = "retry.linkerd.io/grpc"
	annotationLimit   = "retry.linkerd.io/limit"
	annotationTimeout = "retry.linkerd.io/timeout"
)

// ParseLinkerdAnnotations converts Linkerd's retry annotations, the
// metadata.annotations of a Service or an HTTPRoute (Linkerd 2.16 and
// later), to an unherdhttp.Config:
//
//   - retry.linkerd.io/http, a comma-separated list of statuses ("504"),
//     ranges ("500-504"), "gateway-error" (502 to 504) and "5xx", is
//     Config.Classify: the statuses listed are retried, every other
//     failure status is returned at once. Without it no status is
//     retried, as in Linkerd. Transport errors follow unherdhttp's own
//     rules.
//   - retry.linkerd.io/limit (default 1) is Retry.MaxAttempts-1.
//   - retry.linkerd.io/timeout ("300ms", GEP-2257's format) is
//     Retry.AttemptTimeout, after which the attempt is cancelled and
//     retried.
//
// Linkerd's counted retries have no budget and no backoff; the Config
// keeps unherd's (Retry.Budget nil: a token bucket of the Transport's
// own; full jitter from 50 ms).
//
// Annotations outside retry.linkerd.io/ and timeout.linkerd.io/ are not
// read. retry.linkerd.io/grpc is refused (convert gRPC retries for
// unherdgrpc), and so are timeout.linkerd.io/request and /response,
// which bound the whole request including retries (set the request
// context's deadline instead), timeout.linkerd.io/idle, and any unknown
// retry.linkerd.io/ key. Every error wraps ErrConfig and names the
// annotation.
func ParseLinkerdAnnotations(annotations map[string]string) (unherdhttp.Config, error) {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys) // refuse in a stable order
	for _, k := range keys {
		switch {
		case k == annotationHTTP, k == annotationLimit, k == annotationTimeout:
		case k == annotationGRPC:
			return unherdhttp.Config{}, fmt.Errorf("%w: annotation %s is not supported here: convert gRPC retries for unherdgrpc (Config.Codes)", ErrConfig, k)
		case strings.HasPrefix(k, "timeout.linkerd.io/"):
			return unherdhttp.Config{}, fmt.Errorf("%w: annotation %s is not supported: it bounds the whole request, retries included; set the request context's deadline and convert the annotations without it", ErrConfig, k)
		case strings.HasPrefix(k, "retry.linkerd.io/"):
			return unherdhttp.Config{}, fmt.Errorf("%w: annotation %s is not one Linkerd documents", ErrConfig, k)
		}
	}
	var cfg unherdhttp.Config
	var codes statuses
	if v, ok := annotations[annotationHTTP]; ok {
		for _, el := range strings.Split(v, ",") {
			el = strings.TrimSpace(el)
			lo, hi, isRange := strings.Cut(el, "-")
			switch {
			case el == "5xx":
				codes = append(codes, codeRange{500, 599})
			case el == "gateway-error":
				codes = append(codes, codeRange{502, 504})
			default:
				if !isRange {
					hi = lo
				}
				l, err1 := strconv.Atoi(lo)
				h, err2 := strconv.Atoi(hi)
				if err1 != nil || err2 != nil || l < 100 || h > 599 || l > h || !digits(lo) || !digits(hi) {
					return unherdhttp.Config{}, fmt.Errorf("%w: annotation %s: %q is none of a status (\"504\"), a range (\"500-504\"), \"gateway-error\" or \"5xx\"", ErrConfig, annotationHTTP, el)
				}
				codes = append(codes, codeRange{l, h})
			}
		}
	}
	r := rule{status: func(resp *http.Response) bool { return codes.has(resp.StatusCode) }}
	cfg.Classify = func(resp *http.Response, err error) (c failure.Class, ok bool) {
		if resp == nil {
			return c, false
		}
		return r.classify(resp, nil)
	}
	limit := linkerdRetryLimit
	if v, ok := annotations[annotationLimit]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > math.MaxInt32-1 {
			return unherdhttp.Config{}, fmt.Errorf("%w: annotation %s %q is not a count of retries", ErrConfig, annotationLimit, v)
		}
		limit = n
	}
	cfg.Retry.MaxAttempts = limit + 1
	if v, ok := annotations[annotationTimeout]; ok {
		d, err := gatewayDuration(strings.TrimSpace(v), "annotation "+annotationTimeout, false)
		if err != nil {
			return unherdhttp.Config{}, err
		}
		cfg.Retry.AttemptTimeout = d
	}
	return cfg, nil
}
