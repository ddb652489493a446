package loops

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// nilOnFailure reports whether call is an attempt that reports its
// failure by a nil answer rather than an error: a function of the
// package whose first result is a pointer (the others, if any, not an
// error: client, resumed := s.connect()), that returns nil when a call it
// makes fails (if err != nil { return nil }) and that asks another
// service (RemoteDeep).
//
//	func (c *Conn) fetchConfig() *Config {
//		var cfg Config
//		if err := c.get(ctx, "/config", &cfg); err != nil {
//			return nil
//		}
//		return &cfg
//	}
//
// A loop that calls it again while it answers nil is a retry loop.
func (f *finder) nilOnFailure(call *ast.CallExpr) bool {
	fn := match.Callee(f.info, call)
	body := f.bodies[fn]
	if body == nil {
		return false
	}
	res := fn.Type().(*types.Signature).Results()
	if res.Len() == 0 {
		return false
	}
	if _, ptr := res.At(0).Type().Underlying().(*types.Pointer); !ptr {
		return false
	}
	for i := 1; i < res.Len(); i++ {
		if match.IsError(res.At(i).Type()) {
			return false // the error tells the failure
		}
	}
	nils := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit || nils {
			return false
		}
		ifs, ok := n.(*ast.IfStmt)
		if !ok || !failureTest(f.info, ifs.Cond) || len(ifs.Body.List) == 0 {
			return true
		}
		if ret, ok := ifs.Body.List[len(ifs.Body.List)-1].(*ast.ReturnStmt); ok && len(ret.Results) == res.Len() && match.IsNil(f.info, ret.Results[0]) {
			nils = true
		}
		return !nils
	})
	return nils && match.RemoteDeep(f.info, f.bodies, call, 2)
}

// failureTest reports whether cond is err != nil for a variable of
// type error.
func failureTest(info *types.Info, cond ast.Expr) bool {
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ || !match.IsNil(info, b.Y) {
		return false
	}
	id, ok := ast.Unparen(b.X).(*ast.Ident)
	return ok && info.ObjectOf(id) != nil && match.IsError(info.ObjectOf(id).Type())
}

// answerVar returns the variable, or the field, that e names (data,
// c.data), or nil.
func (f *finder) answerVar(e ast.Expr) types.Object {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if e.Name == "_" {
			return nil
		}
		return f.info.ObjectOf(e)
	case *ast.SelectorExpr:
		if v, ok := f.info.ObjectOf(e.Sel).(*types.Var); ok && v.IsField() {
			return v
		}
	}
	return nil
}
