package unherdmesh

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/unherd/unherd/unherdhttp"
)

// Transport returns an http.RoundTripper that sends each request by the
// policy of its route, as Linkerd's proxy does: the first route whose
// condition matches (Route) retries it by its Config, on the profile's
// budget, and bounds it, retries included, by the route's timeout (the
// response body is read within it too); a request no route matches is
// sent once, as by Linkerd's default route. Each route's Transport is an
// unherdhttp.Transport over base; pass one *http.Transport so that the
// routes share its connections. A nil base gives each route the
// connection pool unherdhttp builds for a nil base.
//
// The RoundTripper is safe for concurrent use and never modifies the
// request.
func (p *ServiceProfile) Transport(base http.RoundTripper) (http.RoundTripper, error) {
	pt := &profileTransport{p: p, routes: make([]*unherdhttp.Transport, len(p.routes))}
	for i, rt := range p.routes {
		t, err := unherdhttp.NewTransport(base, rt.Config)
		if err != nil {
			return nil, fmt.Errorf("%w: route %q: %w", ErrConfig, rt.Name, err)
		}
		pt.routes[i] = t
	}
	var once unherdhttp.Config
	once.Retry.MaxAttempts = 1
	t, err := unherdhttp.NewTransport(base, once)
	if err != nil {
		return nil, fmt.Errorf("%w: default route: %w", ErrConfig, err)
	}
	pt.fallback = t
	return pt, nil
}

type profileTransport struct {
	p        *ServiceProfile
	routes   []*unherdhttp.Transport
	fallback *unherdhttp.Transport
}

func (t *profileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for i, rt := range t.p.routes {
		if !rt.match(req) {
			continue
		}
		if rt.Timeout <= 0 {
			return t.routes[i].RoundTrip(req)
		}
		ctx, cancel := context.WithTimeout(req.Context(), rt.Timeout)
		resp, err := t.routes[i].RoundTrip(req.WithContext(ctx))
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	return t.fallback.RoundTrip(req)
}

// cancelOnClose ends the route timeout's context when the body is
// closed, so that the timeout bounds the reading of the body and its
// timer goes with it.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
	once   sync.Once
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.cancel)
	return err
}
