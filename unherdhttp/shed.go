package unherdhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/unherd/unherd/limit"
)

// DefaultShedRetryAfter is the Retry-After a Shed refusal carries when
// ShedConfig.RetryAfter is zero: one second, the smallest delay the
// header can state, which a Transport waits at least (plus its
// ServerJitter) before it tries again.
const DefaultShedRetryAfter = time.Second

// ShedConfig configures Shed. The zero value refuses nothing for
// concurrency and only applies the caller's deadline (TimeoutHeader).
type ShedConfig struct {
	// Limiter admits at most its limit of requests at once; a request
	// over it is refused at once. Nil means no limit.
	Limiter *limit.Limiter

	// RetryAfter is the delay a refusal for overload asks the client to
	// wait, sent as Retry-After in whole seconds, rounded up. Zero means
	// DefaultShedRetryAfter (1 s); it must not be negative. It is not
	// spread: the header counts whole seconds, and a Transport spreads
	// its retries above the server's delay itself (retry.Config's
	// ServerJitter and schedule).
	RetryAfter time.Duration
}

// Validate reports settings that cannot work, naming the field.
func (c *ShedConfig) Validate() error {
	if c.RetryAfter < 0 {
		return fmt.Errorf("%w: ShedConfig.RetryAfter %v is negative", ErrInvalidConfig, c.RetryAfter)
	}
	return nil
}

// Shed validates cfg and returns middleware that refuses work before it
// starts, for a request whose caller has gone or for a server over its
// concurrency limit. For each request, in order:
//
//   - A TimeoutHeader with a valid value (a Transport sends it) becomes a
//     deadline on the request's context, capped at a day; an invalid
//     value is ignored. A value of 0, or a request whose context has
//     already ended, is refused with 504 Gateway Timeout, no Retry-After
//     and a short text body, without the handler: its caller has stopped
//     waiting, or is about to, and a retry, if any, is its own attempt.
//   - The Limiter, if any, admits the request or refuses it with 503
//     Service Unavailable, Retry-After (ShedConfig.RetryAfter) and a
//     short text body, without the handler. A Transport retries such a
//     refusal after at least Retry-After, from its retry budget.
//   - The handler runs. When it returns, the request is released to the
//     Limiter: Dropped if the request's context passed its deadline (the
//     work was too slow: a sign of overload), Ignore if the context was
//     cancelled otherwise (the client went away: no sample), Served
//     otherwise, whatever the status. A handler that panics releases it
//     with Ignore, and the panic goes on.
//
// Put Shed outside Middleware and any other work, so that a refused
// request costs as little as possible. The returned function is safe for
// concurrent use.
func Shed(cfg ShedConfig) (func(http.Handler) http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &shedder{limiter: cfg.Limiter, retryAfter: retryAfterValue(cfg.RetryAfter)}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, h) })
	}, nil
}

type shedder struct {
	limiter    *limit.Limiter
	retryAfter string // Retry-After value of a refusal for overload
}

func (s *shedder) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	ctx := r.Context()
	if v := r.Header.Get(TimeoutHeader); v != "" {
		if d, ok := parseTimeout(v); ok {
			if d <= 0 {
				refuseGone(w)
				return
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
			r = r.WithContext(ctx)
		}
	}
	if ctx.Err() != nil {
		refuseGone(w)
		return
	}
	tok, ok := s.admit(ctx)
	if !ok {
		w.Header().Set("Retry-After", s.retryAfter)
		http.Error(w, "unherdhttp: server overloaded", http.StatusServiceUnavailable)
		return
	}
	returned := false
	defer func() {
		if !returned { // the handler panicked
			tok.Ignore()
		}
	}()
	h.ServeHTTP(w, r)
	returned = true
	release(tok, ctx.Err(), time.Now())
}

// admit asks the limiter for a token for a request to be served under
// ctx. With no limiter, every request is admitted (with the zero Token,
// whose release does nothing).
func (s *shedder) admit(ctx context.Context) (limit.Token, bool) {
	_ = ctx // bounds a wait for a token, when there is one
	if s.limiter == nil {
		return limit.Token{}, true
	}
	return s.limiter.Acquire(time.Now())
}

// release tells the limiter how a request ended that returned at now
// with its context's error err.
func release(tok limit.Token, err error, now time.Time) {
	switch {
	case err == nil:
		tok.Served(now)
	case errors.Is(err, context.DeadlineExceeded):
		tok.Dropped(now)
	default:
		tok.Ignore()
	}
}

// refuseGone answers a request whose caller has stopped waiting.
func refuseGone(w http.ResponseWriter) {
	http.Error(w, "unherdhttp: the caller's deadline has passed", http.StatusGatewayTimeout)
}

// retryAfterValue is the Retry-After value of a refusal: d (zero meaning
// DefaultShedRetryAfter) in whole seconds, rounded up.
func retryAfterValue(d time.Duration) string {
	if d == 0 {
		d = DefaultShedRetryAfter
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return strconv.FormatInt(int64(s), 10)
}
