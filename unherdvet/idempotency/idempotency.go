package idempotency

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

// reportUnkeyed reports l when it repeats a POST or PATCH without an
// Idempotency-Key.
func reportUnkeyed(p *check.Pass, l *loops.Loop) {
	h := match.HTTP(p.TypesInfo, l.Call)
	if h == nil {
		return
	}
	body := l.Func.Outermost().Body
	method := h.Method
	if h.Req != nil {
		var ok bool
		if method, ok = requestMethod(p, body, h.Req, l.Call); !ok {
			return
		}
	}
	if method != "POST" && method != "PATCH" {
		return
	}
	if mentionsKey(p.TypesInfo, body) {
		return
	}
	p.Report(l.Call, "retry loop repeats a "+method+" without an Idempotency-Key header: if a response is lost after the server acted, the retry applies it twice; send an Idempotency-Key that stays the same on every attempt, or use unherdhttp.Transport, which retries "+method+" only with a key (Config.AutoIdempotencyKey adds one) or when it never left")
}

// requestMethod returns the method of the request req names, when every
// write of it in body (other than a declaration without value) is a call of http.NewRequest(WithContext) with the
// same constant method and no call but the attempt receives it.
func requestMethod(p *check.Pass, body *ast.BlockStmt, req ast.Expr, attempt *ast.CallExpr) (string, bool) {
	info, idx := p.TypesInfo, p.Assign
	id, ok := ast.Unparen(req).(*ast.Ident)
	if !ok {
		return "", false
	}
	obj := info.ObjectOf(id)
	writes := idx.Within(obj, body)
	if len(writes) == 0 || len(writes) != len(idx[obj]) {
		return "", false
	}
	method := ""
	for _, w := range writes {
		if w.Op == token.VAR && w.Rhs == nil {
			// var req *http.Request: declared, then made below (the
			// notimeout fix declares it so).
			continue
		}
		call, ok := ast.Unparen(w.Rhs).(*ast.CallExpr)
		if !ok || !w.Tuple || w.Index != 0 {
			return "", false
		}
		m, _, ok := match.NewRequest(info, call)
		if !ok || m == "" || (method != "" && m != method) {
			return "", false
		}
		method = m
	}
	// Handed to another function, the request may get its key there.
	passed := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || call == attempt || passed {
			return !passed
		}
		for _, a := range call.Args {
			if aid, ok := ast.Unparen(a).(*ast.Ident); ok && info.ObjectOf(aid) == obj {
				passed = true
			}
		}
		return !passed
	})
	return method, !passed
}

// mentionsKey reports whether body holds a string constant naming the
// Idempotency-Key (or X-Idempotency-Key) header.
func mentionsKey(info *types.Info, body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		e, ok := n.(ast.Expr)
		if !ok || found {
			return !found
		}
		if tv := info.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.String {
			s := strings.ToLower(constant.StringVal(tv.Value))
			found = s == "idempotency-key" || s == "x-idempotency-key"
		}
		return !found
	})
	return found
}
