package unherdgrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc"

	"github.com/unherd/unherd/budget"
)

// ServiceConfig is a whole gRPC service config (the JSON a name resolver
// delivers or grpc.WithDefaultServiceConfig takes) converted to unherd:
// one Config per "methodConfig" entry that sets a retryPolicy or a
// hedgingPolicy, each converted as ParseMethodConfig converts it, and one
// retry throttle for the whole channel. Its interceptors pick each
// call's policy by the call's method name, as grpc-go picks a method
// config: the entry naming the service and method, else the one naming
// the service alone, else the one with an empty name (the default).
// The most specific entry wins whole: an entry that names a method and
// sets neither policy turns retries off for that method even when its
// service's entry retries.
//
// A6 keeps one retry throttle per server name, for every method; so does
// a ServiceConfig: the budget.GRPC of its "retryThrottling" is shared by
// all of its methods' retries and hedges. Without retryThrottling, the
// retry policies share one budget of unherd's default kind
// (retry.Config.Budget nil: a token bucket), and hedging policies have
// none, as in A6.
//
// Build one ServiceConfig per channel (its throttle is that channel's);
// it is safe for concurrent use.
type ServiceConfig struct {
	byName   map[string]*methodPolicy
	throttle *budget.GRPC
}

// methodPolicy is one methodConfig entry: its Config and the Client that
// drives it, or none when the entry sets neither policy.
type methodPolicy struct {
	cfg    Config
	client *Client // nil: the entry retries and hedges nothing
}

// ParseServiceConfig converts a gRPC service config, as
// ParseMethodConfig converts one of its methodConfig entries. Only
// "methodConfig" and "retryThrottling" are read; the rest
// ("loadBalancingConfig", "healthCheckConfig", ...) stays the channel's
// business. An entry without "name" is skipped, as gRPC skips it; an
// entry that sets neither policy still claims its names, so that its
// methods are not retried. A name with an empty service and a method, a
// name listed twice, an entry that sets both policies, and every error
// ParseMethodConfig reports are errors that wrap ErrServiceConfig and
// say which entry.
func ParseServiceConfig(js []byte) (*ServiceConfig, error) {
	var sc struct {
		MethodConfig    []json.RawMessage `json:"methodConfig"`
		RetryThrottling json.RawMessage   `json:"retryThrottling"`
	}
	if err := json.Unmarshal(js, &sc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServiceConfig, err)
	}
	s := &ServiceConfig{byName: make(map[string]*methodPolicy, len(sc.MethodConfig))}
	var shared budget.Budget
	if isSet(sc.RetryThrottling) {
		g, err := parseThrottling(sc.RetryThrottling)
		if err != nil {
			return nil, err
		}
		s.throttle, shared = g, g
	}
	var retryBudget budget.Budget // the retry policies' default, shared by the channel
	for i, raw := range sc.MethodConfig {
		var mc struct {
			Name *[]struct {
				Service string `json:"service"`
				Method  string `json:"method"`
			} `json:"name"`
			RetryPolicy   json.RawMessage `json:"retryPolicy"`
			HedgingPolicy json.RawMessage `json:"hedgingPolicy"`
		}
		if err := json.Unmarshal(raw, &mc); err != nil {
			return nil, fmt.Errorf("%w: methodConfig[%d]: %w", ErrServiceConfig, i, err)
		}
		if mc.Name == nil {
			continue
		}
		p := &methodPolicy{}
		if isSet(mc.RetryPolicy) || isSet(mc.HedgingPolicy) {
			cfg, err := convertMethod(mc.RetryPolicy, mc.HedgingPolicy, shared)
			if err != nil {
				return nil, fmt.Errorf("methodConfig[%d]: %w", i, err)
			}
			if cfg.Hedge == nil && shared == nil {
				if retryBudget == nil {
					tb, err := budget.NewTokenBucket(budget.TokenBucketConfig{})
					if err != nil {
						return nil, fmt.Errorf("%w: %w", ErrServiceConfig, err)
					}
					retryBudget = tb
				}
				cfg.Retry.Budget = retryBudget
			}
			c, err := NewClient(cfg)
			if err != nil {
				return nil, fmt.Errorf("%w: methodConfig[%d]: %w", ErrServiceConfig, i, err)
			}
			p.cfg, p.client = cfg, c
		}
		for _, n := range *mc.Name {
			if n.Service == "" && n.Method != "" {
				return nil, fmt.Errorf("%w: methodConfig[%d]: name with method %q has no service; an empty service names the default and takes no method", ErrServiceConfig, i, n.Method)
			}
			path := ""
			if n.Service != "" {
				path = "/" + n.Service + "/" + n.Method
			}
			if _, dup := s.byName[path]; dup {
				return nil, fmt.Errorf("%w: methodConfig[%d]: name %q is listed twice", ErrServiceConfig, i, path)
			}
			s.byName[path] = p
		}
	}
	return s, nil
}

// convertMethod converts a methodConfig entry's policies (one must be
// set) with the throttle b, nil for none.
func convertMethod(retryPolicy, hedgingPolicy json.RawMessage, b budget.Budget) (Config, error) {
	hasRetry, hasHedge := isSet(retryPolicy), isSet(hedgingPolicy)
	switch {
	case hasRetry && hasHedge:
		return Config{}, fmt.Errorf("%w: methodConfig sets both retryPolicy and hedgingPolicy; A6 allows one", ErrServiceConfig)
	case hasRetry:
		return parseRetry(retryPolicy, b)
	case hasHedge:
		return parseHedging(hedgingPolicy, b)
	}
	return Config{}, fmt.Errorf("%w: methodConfig has neither retryPolicy nor hedgingPolicy", ErrServiceConfig)
}

// lookup returns the entry that applies to fullMethod
// ("/package.Service/Method"), nil for none.
func (s *ServiceConfig) lookup(fullMethod string) *methodPolicy {
	if p, ok := s.byName[fullMethod]; ok {
		return p
	}
	if i := strings.LastIndexByte(fullMethod, '/'); i > 0 {
		if p, ok := s.byName[fullMethod[:i+1]]; ok {
			return p
		}
	}
	return s.byName[""]
}

// Policy returns the Config that applies to a method, named in full
// ("/package.Service/Method"), and true; or false when no entry with a
// retryPolicy or hedgingPolicy applies, and the method's calls pass
// through the interceptors untouched.
func (s *ServiceConfig) Policy(fullMethod string) (Config, bool) {
	if p := s.lookup(fullMethod); p != nil && p.client != nil {
		return p.cfg, true
	}
	return Config{}, false
}

// Client returns the Client whose interceptors carry a method's calls,
// nil when none does. Methods of one methodConfig entry share a Client.
func (s *ServiceConfig) Client(fullMethod string) *Client {
	if p := s.lookup(fullMethod); p != nil {
		return p.client
	}
	return nil
}

// Throttle returns the channel's retry throttle, from "retryThrottling",
// or nil when the service config has none.
func (s *ServiceConfig) Throttle() *budget.GRPC { return s.throttle }

// DialOptions returns the options that install the ServiceConfig on a
// channel: interceptors that hand each call to its method's Client, and
// grpc.WithDisableRetry, so that grpc-go's own retries never run under
// them (see Client.DialOptions). Dial without the service config's
// retry policies (or with this one only as far as load balancing goes):
// the channel's own would multiply with these.
func (s *ServiceConfig) DialOptions() []grpc.DialOption {
	return dialOptions(s.unary, s.stream)
}

// UnaryClientInterceptor returns the unary interceptor alone, to install
// by hand; see Client.UnaryClientInterceptor.
func (s *ServiceConfig) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return s.unary(noChannelRetry)
}

// StreamClientInterceptor returns the stream interceptor alone; see
// UnaryClientInterceptor.
func (s *ServiceConfig) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return s.stream(noChannelRetry)
}

func (s *ServiceConfig) unary(extra grpc.CallOption) grpc.UnaryClientInterceptor {
	byClient := make(map[*Client]grpc.UnaryClientInterceptor)
	for _, p := range s.byName {
		if p.client != nil && byClient[p.client] == nil {
			byClient[p.client] = p.client.unary(extra)
		}
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if c := s.Client(method); c != nil {
			return byClient[c](ctx, method, req, reply, cc, invoker, opts...)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

func (s *ServiceConfig) stream(extra grpc.CallOption) grpc.StreamClientInterceptor {
	byClient := make(map[*Client]grpc.StreamClientInterceptor)
	for _, p := range s.byName {
		if p.client != nil && byClient[p.client] == nil {
			byClient[p.client] = p.client.stream(extra)
		}
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if c := s.Client(method); c != nil {
			return byClient[c](ctx, desc, cc, method, streamer, opts...)
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
}
