package sleepctx

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/fix"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

// reportSleeps reports the sleeps of l that ignore the context in scope.
func reportSleeps(p *check.Pass, l *loops.Loop) {
	for _, w := range l.Waits {
		if w.Kind != loops.Sleep && w.Kind != loops.After {
			continue
		}
		// A context made inside the loop bounds one attempt, not the wait.
		ctx := match.ContextInScope(p.Pkg, w.Call.Pos(), l.Stmt.Pos())
		if ctx == nil || detached(p, l) || neverDone(p, ctx) {
			continue
		}
		what := "time.Sleep"
		if w.Kind == loops.After {
			what = "<-time.After"
		}
		name := ctx.Name()
		if !match.IsContext(ctx.Type()) {
			name += ".Context()"
		}
		p.ReportFix(w.Call, fmt.Sprintf("retry loop waits with %s although %s is in scope: when the caller gives up, the loop sleeps on and retries anyway; use retry.Do(%s, ...), which stops when the context is done and never waits past its deadline, or select on %s.Done()", what, name, name, name),
			selectFix(p.Pass, l, w, name)...)
	}
}

// selectFix replaces a wait that stands alone as a statement
// (time.Sleep(d), <-time.After(d)) with a select that also returns when
// the context is done, giving up with its error; none when the
// function's results leave no simple way to return.
func selectFix(pass *analysis.Pass, l *loops.Loop, w *loops.Wait, ctx string) []analysis.SuggestedFix {
	var stmt *ast.ExprStmt
	ast.Inspect(l.Body, func(n ast.Node) bool {
		if es, ok := n.(*ast.ExprStmt); ok {
			x := ast.Unparen(es.X)
			if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
				x = ast.Unparen(u.X)
			}
			if x == ast.Expr(w.Call) {
				stmt = es
			}
		}
		return stmt == nil
	})
	sel, ok := ast.Unparen(w.Call.Fun).(*ast.SelectorExpr)
	if stmt == nil || !ok || l.Func.Sig == nil {
		return nil
	}
	timePkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil
	}
	ret, ok := fix.Return(pass.Pkg, l.Func.Sig, ctx+".Err()")
	if !ok {
		return nil
	}
	indent := fix.Indent(pass, stmt.Pos())
	text := fix.Lines(indent,
		"select {",
		"case <-"+ctx+".Done():",
		"\t"+ret,
		"case <-"+timePkg.Name+".After("+fix.Source(pass.Fset, w.Delay)+"):",
		"}")
	return []analysis.SuggestedFix{{
		Message:   "wait in a select that also returns when " + ctx + " is done",
		TextEdits: []analysis.TextEdit{{Pos: stmt.Pos(), End: stmt.End(), NewText: []byte(text)}},
	}}
}

// neverDone reports whether ctx is a variable that only ever holds
// context.Background() or context.TODO(), or a request only ever made by
// http.NewRequest (whose Context() is context.Background()): no caller
// can give up through it, so a sleep that ignores it loses nothing.
func neverDone(p *check.Pass, ctx types.Object) bool {
	return neverDoneDepth(p, ctx, 3)
}

// neverDoneDepth is neverDone, following contexts made from others
// depth levels: a context is never done when every value it is given is
// context.Background() or context.TODO(), or is made from such a context
// by a call that adds no way to cancel it (context.WithValue, a
// logger's WithContext), not by context.WithCancel, WithTimeout or
// WithDeadline.
func neverDoneDepth(p *check.Pass, ctx types.Object, depth int) bool {
	writes := p.Assign[ctx]
	declared := false
	for _, w := range writes {
		declared = declared || w.Op == token.DEFINE || (w.Op == token.VAR && w.Rhs != nil)
	}
	if !declared || depth == 0 {
		return false // a parameter, whose first value the caller gives
	}
	if !match.IsContext(ctx.Type()) {
		// A request made with http.NewRequest, and never given another
		// context: its Context() is context.Background().
		return match.BackgroundRequest(p.TypesInfo, writes)
	}
	for _, w := range writes {
		call, ok := ast.Unparen(w.Rhs).(*ast.CallExpr)
		if !ok || w.Tuple || !rootless(p, call, ctx, depth) {
			return false
		}
	}
	return true
}

// rootless reports whether call makes a context nothing can cancel:
// context.Background(), context.TODO(), or a call outside package
// context's With... functions whose only context argument is such a
// context.
//
// self is the variable being judged: ctx = context.WithValue(ctx, k, v)
// adds nothing to what its other values decide.
func rootless(p *check.Pass, call *ast.CallExpr, self types.Object, depth int) bool {
	fn := match.Callee(p.TypesInfo, call)
	if match.Func(fn, "context", "Background", "TODO") {
		return true
	}
	if fn == nil || !match.IsContext(p.TypesInfo.TypeOf(call)) || depth == 0 {
		return false
	}
	if fn.Pkg() != nil && fn.Pkg().Path() == "context" && fn.Name() != "WithValue" && fn.Name() != "WithoutCancel" {
		return false // WithCancel, WithTimeout, WithDeadline, AfterFunc...
	}
	found := false
	for _, a := range call.Args {
		if !match.IsContext(p.TypesInfo.TypeOf(a)) {
			continue
		}
		switch a := ast.Unparen(a).(type) {
		case *ast.CallExpr:
			if !rootless(p, a, self, depth-1) {
				return false
			}
		case *ast.Ident:
			if o := p.TypesInfo.ObjectOf(a); o != self && !neverDoneDepth(p, o, depth-1) {
				return false
			}
		default:
			return false
		}
		found = true
	}
	return found
}

// detached reports whether the attempt runs under a context the loop
// makes for it from something other than the caller's context: from
// context.Background, context.WithoutCancel or a helper. Such a loop
// means to outlive its caller (completing a record after the request
// ended), so its sleeps are not reported. A context derived from the
// caller's with context.WithTimeout and the like still is.
func detached(p *check.Pass, l *loops.Loop) bool {
	for _, a := range l.Call.Args {
		id, ok := ast.Unparen(a).(*ast.Ident)
		if !ok {
			continue
		}
		v, ok := p.TypesInfo.ObjectOf(id).(*types.Var)
		if !ok || !match.IsContext(v.Type()) || v.Pos() < l.Stmt.Pos() || v.Pos() > l.Stmt.End() {
			continue // not a context made in the loop
		}
		for _, w := range p.Assign[v] {
			if !derived(p.TypesInfo, w.Rhs, l) {
				return true
			}
		}
	}
	return false
}

// derived reports whether e is context.WithTimeout (or WithDeadline,
// WithCancel, WithValue and their Cause forms) of a context from outside
// the loop.
func derived(info *types.Info, e ast.Expr, l *loops.Loop) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	if !match.Func(match.Callee(info, call), "context", "WithTimeout", "WithDeadline", "WithCancel", "WithValue",
		"WithTimeoutCause", "WithDeadlineCause", "WithCancelCause") {
		return false
	}
	switch parent := ast.Unparen(call.Args[0]).(type) {
	case *ast.Ident:
		o := info.ObjectOf(parent)
		return o != nil && (o.Pos() < l.Stmt.Pos() || o.Pos() > l.Stmt.End())
	case *ast.CallExpr: // r.Context()
		sel, ok := ast.Unparen(parent.Fun).(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Context" && match.Named(info.TypeOf(sel.X), "net/http", "Request")
	}
	return false
}
