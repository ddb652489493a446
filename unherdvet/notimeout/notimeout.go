// Package notimeout defines an Analyzer that reports HTTP calls with no
// timeout at all.
//
// A call without a timeout waits as long as the server keeps the
// connection open: a hung dependency then holds a goroutine, a connection
// and whatever the caller locked, for ever, and a caller that retries
// never gets to retry. It reports:
//
//   - http.Get, http.Head, http.Post and http.PostForm, and those methods
//     and Do on http.DefaultClient: the default client has no Timeout,
//     and the first four take no context;
//   - the same calls on an http.Client built in the package (a composite
//     literal, new(http.Client) or a zero http.Client variable) without a
//     Timeout, for Get, Head, Post
//     and PostForm, and for Do of a request built with http.NewRequest
//     (no context, so no deadline).
//
// A request built with http.NewRequestWithContext is assumed to carry a
// deadline; a client the analyzer did not see built is assumed to have a
// timeout. The fix is an http.Client with Timeout set, or
// http.NewRequestWithContext with a context deadline; with
// unherdhttp.Transport, Config.AttemptTimeout bounds each attempt too.
package notimeout

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/assign"
	"github.com/unherd/unherd/unherdvet/internal/match"
	"github.com/unherd/unherd/unherdvet/internal/suppress"
)

// Analyzer reports HTTP calls without any timeout.
var Analyzer = &analysis.Analyzer{
	Name:     "notimeout",
	Doc:      "report HTTP calls with no timeout: the default client, or a client without Timeout and a request without context",
	Requires: []*analysis.Analyzer{assign.Analyzer},
	Run:      run,
}

const fix = "use an http.Client with Timeout set, or http.NewRequestWithContext with a context deadline (with unherdhttp.Transport, Config.AttemptTimeout bounds each attempt)"

func run(pass *analysis.Pass) (any, error) {
	r := suppress.New(pass)
	c := &checker{info: pass.TypesInfo, idx: pass.ResultOf[assign.Analyzer].(assign.Index)}
	for _, f := range pass.Files {
		if match.Skip(pass, f) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			h := match.HTTP(c.info, call)
			if h == nil || h.Func.Name() == "RoundTrip" {
				return true
			}
			name := "http." + h.Func.Name()
			switch {
			case h.Client == nil:
				r.Report(call, fmt.Sprintf("%s uses http.DefaultClient, which has no timeout, and takes no context: a server that stops answering holds this call for ever; %s", name, fix))
			case match.IsDefaultClient(c.info, h.Client):
				if h.Req == nil || c.noContext(h.Req) {
					r.Report(call, fmt.Sprintf("http.DefaultClient.%s has no timeout: a server that stops answering holds this call for ever; %s", h.Func.Name(), fix))
				}
			case c.noTimeout(h.Client):
				if h.Req == nil || c.noContext(h.Req) {
					what := "takes no context"
					if h.Req != nil {
						what = "its request, from http.NewRequest, has no context"
					}
					r.Report(call, fmt.Sprintf("%s on an http.Client without Timeout, and %s: a server that stops answering holds this call for ever; %s", types.ExprString(h.Client)+"."+h.Func.Name(), what, fix))
				}
			}
			return true
		})
	}
	return nil, nil
}

type checker struct {
	info *types.Info
	idx  assign.Index
}

// noTimeout reports whether client is a variable (or literal) whose every
// value is an http.Client built without Timeout, and whose Timeout field
// is never set.
func (c *checker) noTimeout(client ast.Expr) bool {
	client = ast.Unparen(client)
	if lit := clientLit(c.info, client); lit != nil {
		return !hasTimeout(lit)
	}
	id, ok := client.(*ast.Ident)
	if !ok {
		return false
	}
	obj := c.info.ObjectOf(id)
	writes := c.idx[obj]
	if len(writes) == 0 {
		return false
	}
	for _, w := range writes {
		if w.Op == token.VAR && w.Rhs == nil && match.Named(obj.Type(), "net/http", "Client") {
			if _, ptr := obj.Type().(*types.Pointer); !ptr {
				continue // var c http.Client: the zero Client has no Timeout
			}
		}
		if w.Tuple || w.Rhs == nil {
			return false
		}
		if lit := clientLit(c.info, ast.Unparen(w.Rhs)); lit == nil || hasTimeout(lit) {
			if !isNewClient(c.info, w.Rhs) {
				return false
			}
		}
	}
	// client.Timeout = ... anywhere in the package.
	for o, ws := range c.idx {
		if o.Name() != "Timeout" {
			continue
		}
		for _, w := range ws {
			if sel, ok := w.Lhs.(*ast.SelectorExpr); ok {
				if xid, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.ObjectOf(xid) == obj {
					return false
				}
			}
		}
	}
	return true
}

// clientLit returns the http.Client composite literal e is (or points
// to), or nil.
func clientLit(info *types.Info, e ast.Expr) *ast.CompositeLit {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = ast.Unparen(u.X)
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	if !match.Named(info.TypeOf(lit), "net/http", "Client") {
		return nil
	}
	return lit
}

func isNewClient(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || id.Name != "new" {
		return false
	}
	return match.Named(info.TypeOf(call.Args[0]), "net/http", "Client")
}

func hasTimeout(lit *ast.CompositeLit) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Timeout" {
				return true
			}
		}
	}
	return false
}

// noContext reports whether req is a variable whose every value comes
// from http.NewRequest, which gives it no context.
func (c *checker) noContext(req ast.Expr) bool {
	id, ok := ast.Unparen(req).(*ast.Ident)
	if !ok {
		return false
	}
	writes := c.idx[c.info.ObjectOf(id)]
	if len(writes) == 0 {
		return false
	}
	for _, w := range writes {
		call, ok := ast.Unparen(w.Rhs).(*ast.CallExpr)
		if !ok {
			return false
		}
		if _, withCtx, ok := match.NewRequest(c.info, call); !ok || withCtx {
			return false
		}
	}
	return true
}
