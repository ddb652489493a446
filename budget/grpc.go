package budget

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/unherd/unherd/failure"
)

// Defaults of [GRPCConfig]. gRPC itself turns retry throttling off unless
// the service config sets both values; these are the values of the example
// in gRPC proposal A6, "gRPC Retry Design", section "Throttling Retry
// Attempts and Hedged RPCs"
// (https://github.com/grpc/proposal/blob/master/A6-client-retries.md).
const (
	DefaultMaxTokens  = 10
	DefaultTokenRatio = 0.1
)

// MaxGRPCTokens is the largest GRPCConfig.MaxTokens: proposal A6 requires
// maxTokens in (0, 1000]. TokenRatio has the same upper bound here, since a
// success cannot add more than the largest bucket holds.
const MaxGRPCTokens = 1000

// milli is the fixed-point scale: tokens are counted in thousandths, as
// grpc-java's RetriableStream.Throttle does, so that A6's three decimal
// places are exact (a tokenRatio of 0.1 adds exactly 100) and the count is
// one integer word.
const milli = 1000

// GRPCConfig configures a [GRPC] budget, with the names of the
// retryThrottling section of a gRPC service config. The zero value is
// MaxTokens 10 and TokenRatio 0.1: retries stop once failures outnumber a
// tenth of the successes by 5.
type GRPCConfig struct {
	// MaxTokens is the most tokens the budget holds, and what it starts
	// with; retries are allowed only while more than half remain. It must
	// be in (0, 1000] and is kept to three decimal places, like
	// TokenRatio. Zero means
	// DefaultMaxTokens (10).
	MaxTokens float64
	// TokenRatio is what a success puts back (a failure costs 1). A6
	// supports "up to 3 decimal places": the digits of its shortest
	// decimal form after the third are dropped, not rounded, as gRPC's
	// C++ client drops them from the service config's text and its Java
	// client truncates (0.0015 is 0.001, 0.9999 is 0.999; grpc-go keeps
	// every digit of the float). It must be at
	// least 0.001 and at most 1000. Zero means DefaultTokenRatio (0.1).
	TokenRatio float64
}

// Validate reports settings that cannot work, naming the field.
func (c *GRPCConfig) Validate() error {
	mt := cmp.Or(c.MaxTokens, DefaultMaxTokens)
	tr := cmp.Or(c.TokenRatio, DefaultTokenRatio)
	switch {
	case !(mt > 0 && mt <= MaxGRPCTokens): // also rejects NaN
		return fmt.Errorf("%w: GRPCConfig.MaxTokens %v is outside (0, 1000]", ErrInvalidConfig, c.MaxTokens)
	case !(tr > 0 && tr <= MaxGRPCTokens):
		return fmt.Errorf("%w: GRPCConfig.TokenRatio %v is outside (0, 1000]", ErrInvalidConfig, c.TokenRatio)
	case toMilli(mt) == 0:
		return fmt.Errorf("%w: GRPCConfig.MaxTokens %v is 0 at three decimal places", ErrInvalidConfig, c.MaxTokens)
	case toMilli(tr) == 0:
		return fmt.Errorf("%w: GRPCConfig.TokenRatio %v is 0 at three decimal places; the smallest is 0.001", ErrInvalidConfig, c.TokenRatio)
	}
	return nil
}

// toMilli converts v, known to be in [0, 1000], to thousandths: the
// first three decimals of its shortest decimal form, the rest dropped.
// Working on the decimal digits, not on v*1000, keeps 0.57 at 570 (v*1000
// is 569.99... in binary) and still drops the fourth digit of 0.9999.
func toMilli(v float64) int64 {
	whole, frac, _ := strings.Cut(strconv.FormatFloat(v, 'f', -1, 64), ".")
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000")[:3], 10, 64)
	return w*milli + f
}

// GRPC is gRPC's retry throttling (proposal A6): a token count that each
// retryable failure lowers by 1 and each success raises by TokenRatio,
// bounded to [0, MaxTokens]; a retry is allowed only while the count is
// above MaxTokens/2. Unlike the [TokenBucket], retries themselves cost
// nothing extra: the failure that prompts a retry is what pays, so the
// budget tracks the dependency's recent failure rate, and retries stop
// when failures exceed about TokenRatio/(1+TokenRatio) of attempts.
//
// Record of a failed attempt whose Class is not Permanent costs 1 token
// (Throttled counts: A6 counts server pushback as a failure); a success
// adds TokenRatio; a Permanent failure changes nothing. Withdraw only
// looks: it reports whether the count is above half, and takes nothing.
//
// Choose it to match a gRPC service config, or for a budget that reacts to
// the failure rate rather than to the number of retries made.
//
// A GRPC is safe for concurrent use; share one among all the goroutines
// calling one dependency. The zero GRPC is not usable; call NewGRPC.
type GRPC struct {
	// Read-only after NewGRPC, in thousandths of a token.
	max   int64
	ratio int64

	_ [cacheLine]byte
	// tokens, in thousandths: one atomic word, updated by compare-and-swap
	// for the same reasons as TokenBucket.tokens. A success with the count
	// already at MaxTokens is a load and nothing else.
	tokens atomic.Int64
	_      [cacheLine - 8]byte
}

// NewGRPC validates cfg and returns a budget holding MaxTokens.
func NewGRPC(cfg GRPCConfig) (*GRPC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &GRPC{
		max:   toMilli(cmp.Or(cfg.MaxTokens, DefaultMaxTokens)),
		ratio: toMilli(cmp.Or(cfg.TokenRatio, DefaultTokenRatio)),
	}
	g.tokens.Store(g.max)
	return g, nil
}

// Withdraw reports whether a retry may go ahead: whether more than half of
// MaxTokens remain. It changes nothing; the failure was charged when it was
// recorded. A Permanent failure is never retried.
func (g *GRPC) Withdraw(c failure.Class) bool {
	if c >= failure.Permanent {
		return false
	}
	// tokens > max/2, exactly, in integers.
	return 2*g.tokens.Load() > g.max
}

// Record lowers the count by one token for a retryable failure and raises
// it by TokenRatio for a success, within [0, MaxTokens].
func (g *GRPC) Record(a Attempt) {
	switch {
	case !a.Failed:
		g.add(g.ratio)
	case a.Class < failure.Permanent:
		g.add(-milli)
	}
}

func (g *GRPC) add(d int64) {
	for {
		t := g.tokens.Load()
		n := min(max(t+d, 0), g.max)
		if n == t {
			return
		}
		if g.tokens.CompareAndSwap(t, n) {
			return
		}
	}
}

// Tokens returns the current token count.
func (g *GRPC) Tokens() float64 { return float64(g.tokens.Load()) / milli }
