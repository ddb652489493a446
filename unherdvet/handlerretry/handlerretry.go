package handlerretry

import (
	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

// reportInHandler reports l when it retries a remote call inside an HTTP
// handler.
func reportInHandler(p *check.Pass, l *loops.Loop) {
	if inHandler(l.Func) && match.Remote(p.TypesInfo, l.Call) {
		p.Report(l.At, "retry loop in an HTTP handler around a call to another service: when this handler's callers retry too, attempts multiply at every layer (3 layers of 3 attempts make 27); make one attempt here, or use retry.Do with the request's context behind unherdhttp.Middleware, which retries only at the edge")
	}
}

func inHandler(fn *loops.Func) bool {
	for ; fn != nil; fn = fn.Outer {
		if match.IsHandler(fn.Sig) {
			return true
		}
	}
	return false
}
