package a

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"
)

// Retries by mutual recursion: the attempt's function hands a failure to
// another function of the package, which waits and calls it again.

type relay struct{ hc *http.Client }

// Positive: send hands a failed attempt to resend, which waits a
// constant and calls send again, one try fewer.
func (r *relay) send(req *http.Request, tries int) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	if err != nil {
		if tries > 0 {
			return r.resend(req, tries)
		}
		return nil, err
	}
	return resp, nil
}

func (r *relay) resend(req *http.Request, tries int) (*http.Response, error) {
	time.Sleep(2 * time.Second) // want `nojitter: retry loop waits a constant 2s`
	return r.send(req, tries-1)
}

// Positive: the helper waits the delay it is given, in a select on the
// request's context, and hands the next attempt twice that delay.
func (r *relay) fetch(ctx context.Context, req *http.Request, tries int, wait time.Duration) (*http.Response, error) {
	resp, err := r.hc.Do(req.WithContext(ctx))
	if err != nil && tries > 0 && !errors.Is(err, context.Canceled) {
		return r.refetch(ctx, req, tries, wait)
	}
	return resp, err
}

func (r *relay) refetch(ctx context.Context, req *http.Request, tries int, wait time.Duration) (*http.Response, error) {
	select {
	case <-time.After(wait): // want `nojitter: retry loop's delay grows without jitter`
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.fetch(ctx, req, tries-1, wait*2)
}

// Negative: the same helper waits a random share of the delay.
func (r *relay) fetchJittered(ctx context.Context, req *http.Request, tries int, wait time.Duration) (*http.Response, error) {
	resp, err := r.hc.Do(req.WithContext(ctx))
	if err != nil && tries > 0 {
		return r.refetchJittered(ctx, req, tries, wait)
	}
	return resp, err
}

func (r *relay) refetchJittered(ctx context.Context, req *http.Request, tries int, wait time.Duration) (*http.Response, error) {
	select {
	case <-time.After(rand.N(wait)):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.fetchJittered(ctx, req, tries-1, wait*2)
}

type job struct{ Done bool }

func (r *relay) status(ctx context.Context) (job, error) { return job{}, nil }

// Negative: a poll by mutual recursion. The helper is called when the
// job is not done yet, after a success; a failure returns.
func (r *relay) poll(ctx context.Context) (job, error) {
	j, err := r.status(ctx)
	if err != nil {
		return j, err
	}
	if !j.Done {
		return r.pollLater(ctx)
	}
	return j, nil
}

func (r *relay) pollLater(ctx context.Context) (job, error) {
	time.Sleep(time.Second)
	return r.poll(ctx)
}

// Negative: on failure the function hands over to a fallback that waits
// but never calls it again.
func (r *relay) sendOnce(req *http.Request) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	if err != nil {
		return r.fallback(req)
	}
	return resp, nil
}

func (r *relay) fallback(req *http.Request) (*http.Response, error) {
	time.Sleep(time.Second)
	return r.hc.Do(req)
}
