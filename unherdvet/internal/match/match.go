// Package match recognises the calls, types and functions the checks look
// for: a call to time.Sleep, a value of type context.Context, an HTTP
// handler's signature.
package match

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Callee returns the function or method a call invokes, or nil for a
// call of a function value, a conversion or a builtin.
func Callee(info *types.Info, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	case *ast.IndexExpr: // generic instantiation f[T](...)
		return calleeOf(info, fun.X)
	case *ast.IndexListExpr:
		return calleeOf(info, fun.X)
	default:
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	return fn
}

func calleeOf(info *types.Info, e ast.Expr) *types.Func {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[e].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[e.Sel].(*types.Func)
		return fn
	}
	return nil
}

// Func reports whether fn is the package-level function path.name for
// one of names.
func Func(fn *types.Func, path string, names ...string) bool {
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != path {
		return false
	}
	if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() != nil {
		return false
	}
	return slices.Contains(names, fn.Name())
}

// Method reports whether fn is a method of the named type path.typ (or
// of a pointer to it) called one of names.
func Method(fn *types.Func, path, typ string, names ...string) bool {
	if fn == nil {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	return Named(sig.Recv().Type(), path, typ) && slices.Contains(names, fn.Name())
}

// Named reports whether t, or what t points to, is the named type
// path.name.
func Named(t types.Type, path, name string) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	o := n.Obj()
	return o.Pkg() != nil && o.Pkg().Path() == path && o.Name() == name
}

// Object reports whether obj is the package-level object path.name.
func Object(obj types.Object, path, name string) bool {
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == path &&
		obj.Name() == name && obj.Parent() == obj.Pkg().Scope()
}

// Mentions reports whether n holds an identifier that refers to obj.
func Mentions(info *types.Info, n ast.Node, obj types.Object) bool {
	for m := range ast.Preorder(n) {
		if id, ok := m.(*ast.Ident); ok && info.ObjectOf(id) == obj {
			return true
		}
	}
	return false
}

// VarOf returns the variable or field that e names (v, x.f), or nil.
func VarOf(info *types.Info, e ast.Expr) *types.Var {
	var obj types.Object
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		obj = info.ObjectOf(e)
	case *ast.SelectorExpr:
		obj = info.ObjectOf(e.Sel)
	}
	v, _ := obj.(*types.Var)
	return v
}

// AnyReturn reports whether f holds for a result of a return statement
// of body, outside the function literals in it.
func AnyReturn(body *ast.BlockStmt, f func(ast.Expr) bool) bool {
	skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
	return Any(body, skip, func(n ast.Node) bool {
		r, ok := n.(*ast.ReturnStmt)
		return ok && slices.ContainsFunc(r.Results, f)
	})
}

// IsContext reports whether t is context.Context.
func IsContext(t types.Type) bool { return Named(t, "context", "Context") }

// IsNil reports whether e is the predeclared nil.
func IsNil(info *types.Info, e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "nil" && info.Types[id].IsNil()
}

// IsError reports whether t is the predeclared error type, or an
// interface of a package's own that embeds it (type Error interface {
// error; Code() int }): a call returning either fails the same way.
func IsError(t types.Type) bool {
	errType := types.Universe.Lookup("error").Type()
	if types.Identical(t, errType) {
		return true
	}
	return t != nil && types.IsInterface(t) && types.Implements(t, errType.Underlying().(*types.Interface))
}

// ReturnsError reports whether the call's last result is an error.
func ReturnsError(info *types.Info, call *ast.CallExpr) bool {
	tv, ok := info.Types[call]
	if !ok || tv.IsType() {
		return false
	}
	switch t := tv.Type.(type) {
	case *types.Tuple:
		return t.Len() > 0 && IsError(t.At(t.Len()-1).Type())
	default:
		return IsError(t)
	}
}

// IsHandler reports whether a function of type sig serves HTTP: it takes
// an http.ResponseWriter and an *http.Request.
func IsHandler(sig *types.Signature) bool {
	if sig == nil {
		return false
	}
	var w, r bool
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		w = w || Named(t, "net/http", "ResponseWriter")
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			r = r || Named(p.Elem(), "net/http", "Request")
		}
	}
	return w && r
}

// Skip reports whether the file holding n is one the checks leave alone:
// a test file, a file of a test-support package (one whose import path
// has an element named e2e, tests, testutil or testhelper) or generated
// code. Retry loops in tests wait for a test
// server or a local container, and their delays do not reach production.
func Skip(pass *analysis.Pass, f *ast.File) bool {
	name := pass.Fset.File(f.Pos()).Name()
	if strings.HasSuffix(name, "_test.go") || ast.IsGenerated(f) {
		return true
	}
	for _, dir := range strings.Split(pass.Pkg.Path(), "/") {
		switch dir {
		case "e2e", "tests", "testutil", "testutils", "testhelper", "testhelpers":
			return true
		}
	}
	return false
}

// IsRand reports whether fn draws random numbers: a function or method
// of math/rand, math/rand/v2 or crypto/rand.
func IsRand(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() {
	case "math/rand", "math/rand/v2", "crypto/rand":
		return true
	}
	return false
}

// ContextInScope returns a variable of type context.Context declared
// before the position before in a function scope that encloses pos;
// failing that, one of type *http.Request (whose Context method gives
// one); or nil.
func ContextInScope(pkg *types.Package, pos, before token.Pos) types.Object {
	var req types.Object
	for s := pkg.Scope().Innermost(pos); s != nil && s != pkg.Scope() && s != types.Universe; s = s.Parent() {
		for _, name := range s.Names() {
			v, ok := s.Lookup(name).(*types.Var)
			if !ok || v.Pos() >= before || name == "_" {
				continue
			}
			if IsContext(v.Type()) {
				return v
			}
			if req == nil && Named(v.Type(), "net/http", "Request") {
				req = v
			}
		}
	}
	return req
}
