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

	// Priority returns a request's priority for the Limiter: Sheddable
	// requests are refused first, and a share of the limit is kept for
	// Critical ones (limit.Config.CriticalShare). Nil means the value of
	// the limit.PriorityHeader request header, which any client may set
	// (Normal when absent or invalid): behind a public edge, set Priority
	// to one that trusts the header only from callers it trusts, or lets
	// them lower their priority but not raise it.
	Priority func(*http.Request) limit.Priority
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
//   - The Limiter, if any, admits the request at its priority
//     (ShedConfig.Priority), waiting in the Limiter's queue if it has one
//     (limit.Config.MaxWait), or refuses it with 503 Service Unavailable,
//     Retry-After (ShedConfig.RetryAfter) and a short text body, without
//     the handler. A Transport retries such a refusal after at least
//     Retry-After, from its retry budget. A request whose deadline passes
//     while it waits in the queue, or whose client goes away, leaves the
//     queue and is answered 504 like one that arrived too late.
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
	s := &shedder{limiter: cfg.Limiter, retryAfter: retryAfterValue(cfg.RetryAfter), priority: cfg.Priority}
	if s.priority == nil {
		s.priority = headerPriority
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, h) })
	}, nil
}

type shedder struct {
	limiter    *limit.Limiter
	retryAfter string // Retry-After value of a refusal for overload
	priority   func(*http.Request) limit.Priority
}

// headerPriority is the priority the request's limit.PriorityHeader
// names, or Normal.
func headerPriority(r *http.Request) limit.Priority {
	p, err := limit.ParsePriority(r.Header.Get(limit.PriorityHeader))
	if err != nil {
		return limit.Normal
	}
	return p
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
	tok, err := s.admit(ctx, r)
	switch {
	case errors.Is(err, limit.ErrLimited):
		w.Header().Set("Retry-After", s.retryAfter)
		http.Error(w, "unherdhttp: server overloaded", http.StatusServiceUnavailable)
		return
	case err != nil: // the caller went away while the request waited
		refuseGone(w)
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
	release(tok, ctx.Err(), limit.Now())
}

// admit asks the limiter for a token for r, to be served under ctx,
// waiting in its queue while ctx lasts. With no limiter, every request is
// admitted (with the zero Token, whose release does nothing).
func (s *shedder) admit(ctx context.Context, r *http.Request) (limit.Token, error) {
	if s.limiter == nil {
		return limit.Token{}, nil
	}
	return s.limiter.Wait(ctx, s.priority(r))
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
