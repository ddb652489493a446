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
	body := l.Func.Outermost().Body
	if req := handed(p, l); req != nil && !readsMethod(p.TypesInfo, body) && !mentionsKey(p.TypesInfo, body) && sendsPost(p) {
		p.Report(l.Call, "retry loop sends again the request it was handed, whatever its method, without an Idempotency-Key header, and this package hands it POST requests: if a response is lost after the server acted, the retry applies it twice; retry only GET, HEAD, OPTIONS and requests with an Idempotency-Key that stays the same on every attempt, or use unherdhttp.Transport, which does")
		return
	}
	h := match.HTTP(p.TypesInfo, l.Call)
	if h == nil {
		return
	}
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
		if ok && m == "" {
			// http.NewRequest(method, ...) with the method a parameter:
			// what the package's callers pass decides.
			m = passedMethod(p, call)
		}
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
	for n := range ast.Preorder(body) {
		e, ok := n.(ast.Expr)
		if !ok {
			continue
		}
		if tv := info.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.String {
			if s := strings.ToLower(constant.StringVal(tv.Value)); s == "idempotency-key" || s == "x-idempotency-key" {
				return true
			}
		}
	}
	return false
}

// passedMethod returns "POST" or "PATCH" when req, a call of
// http.NewRequest(WithContext) whose method is a parameter of the
// function around it, is given that method by a call in the package,
// directly or through callers that pass their own parameter on (three
// levels at most); "" otherwise.
func passedMethod(p *check.Pass, req *ast.CallExpr) string {
	arg := req.Args[0]
	if len(req.Args) == 4 {
		arg = req.Args[1]
	}
	id, ok := ast.Unparen(arg).(*ast.Ident)
	if !ok {
		return ""
	}
	fn, index := paramOf(p, p.TypesInfo.ObjectOf(id))
	if fn == nil {
		return ""
	}
	return methodFromCallers(p, fn, index, 3)
}

// paramOf returns the function of the package that v is a parameter of,
// with its index; nil when v is none.
func paramOf(p *check.Pass, v types.Object) (*types.Func, int) {
	if v == nil {
		return nil, -1
	}
	for fn := range p.Bodies() {
		params := fn.Type().(*types.Signature).Params()
		for i := range params.Len() {
			if params.At(i) == v {
				return fn, i
			}
		}
	}
	return nil, -1
}

// methodFromCallers returns "POST" or "PATCH" when a call of fn in the
// package passes that constant at the parameter index, or passes a
// parameter of its own function whose callers do (depth levels).
func methodFromCallers(p *check.Pass, fn *types.Func, index, depth int) string {
	if depth == 0 || fn.Type().(*types.Signature).Variadic() && index >= fn.Type().(*types.Signature).Params().Len()-1 {
		return ""
	}
	found := ""
	for _, file := range p.Files {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found != "" || index >= len(call.Args) {
				return found == ""
			}
			if c := match.Callee(p.TypesInfo, call); c == nil || c.Origin() != fn.Origin() {
				return true
			}
			a := call.Args[index]
			if tv := p.TypesInfo.Types[a]; tv.Value != nil && tv.Value.Kind() == constant.String {
				if m := strings.ToUpper(constant.StringVal(tv.Value)); m == "POST" || m == "PATCH" {
					found = m
				}
				return true
			}
			if id, ok := ast.Unparen(a).(*ast.Ident); ok {
				if outer, i := paramOf(p, p.TypesInfo.ObjectOf(id)); outer != nil && outer != fn {
					found = methodFromCallers(p, outer, i, depth-1)
				}
			}
			return true
		})
	}
	return found
}

// handed returns the *http.Request parameter of the function around l
// that the attempt is given, as it is or as a copy the loop makes of it
// (cloned := clone(req, ctx), req.Clone(ctx)); nil when the attempt is
// given no request, or one the loop builds itself.
func handed(p *check.Pass, l *loops.Loop) types.Object {
	info := p.TypesInfo
	params := make(map[types.Object]bool)
	for fn := l.Func; fn != nil; fn = fn.Outer {
		if fn.Sig == nil {
			continue
		}
		for v := range fn.Sig.Params().Variables() {
			if isRequest(v.Type()) {
				params[v] = true
			}
		}
	}
	if len(params) == 0 {
		return nil
	}
	// from returns the parameter that call copies: its receiver
	// (req.Clone(ctx)) or one of its arguments (clone(req, ctx)).
	from := func(call *ast.CallExpr) types.Object {
		operands := call.Args
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			operands = append([]ast.Expr{sel.X}, operands...)
		}
		for _, o := range operands {
			if id, ok := ast.Unparen(o).(*ast.Ident); ok && params[info.ObjectOf(id)] {
				return info.ObjectOf(id)
			}
		}
		return nil
	}
	for _, a := range l.Call.Args {
		if !isRequest(info.TypeOf(a)) {
			continue
		}
		switch a := ast.Unparen(a).(type) {
		case *ast.Ident:
			v := info.ObjectOf(a)
			if params[v] {
				return v
			}
			// cloned, err := cloneRequest(req, ctx) in the loop.
			var req types.Object
			ast.Inspect(l.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || len(as.Rhs) != 1 || req != nil {
					return req == nil
				}
				if id, ok := ast.Unparen(as.Lhs[0]).(*ast.Ident); ok && info.ObjectOf(id) == v {
					if c, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok {
						req = from(c)
					}
				}
				return req == nil
			})
			if req != nil {
				return req
			}
		case *ast.CallExpr:
			if v := from(a); v != nil {
				return v // h.Do(req.Clone(ctx))
			}
		}
	}
	return nil
}

// isRequest reports whether t is *http.Request.
func isRequest(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	return ok && match.Named(p.Elem(), "net/http", "Request")
}

// readsMethod reports whether body reads the Method of an
// *http.Request: code that may retry only some methods.
func readsMethod(info *types.Info, body *ast.BlockStmt) bool {
	for n := range ast.Preorder(body) {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Method" && isRequest(info.TypeOf(sel.X)) {
			return true
		}
	}
	return false
}

// sendsPost reports whether the package names the POST or PATCH method
// (a string constant such as "POST" or http.MethodPost) outside the
// test files: requests with those methods pass through its code.
func sendsPost(p *check.Pass) bool {
	for _, f := range p.Files {
		if strings.HasSuffix(p.Fset.File(f.Pos()).Name(), "_test.go") {
			continue
		}
		for n := range ast.Preorder(f) {
			e, ok := n.(ast.Expr)
			if !ok {
				continue
			}
			if tv := p.TypesInfo.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.String {
				if m := strings.ToUpper(constant.StringVal(tv.Value)); m == "POST" || m == "PATCH" {
					return true
				}
			}
		}
	}
	return false
}
