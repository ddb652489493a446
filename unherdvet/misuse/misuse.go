package misuse

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

const (
	backoffPath = "github.com/unherd/unherd/backoff"
	budgetPath  = "github.com/unherd/unherd/budget"
	retryPath   = "github.com/unherd/unherd/retry"
	httpPath    = "github.com/unherd/unherd/unherdhttp"
)

// reportMisuse reports the misuses of unherd's packages in f.
func reportMisuse(p *check.Pass, f *ast.File) {
	m := &checker{p: p}
	m.values(f)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			sig, _ := p.TypesInfo.ObjectOf(fd.Name).Type().(*types.Signature)
			m.fn(fd.Body, fd.Name.Name, sig, false)
		}
	}
}

type checker struct {
	p *check.Pass
}

// values reports backoff.None and Immediate in schedules, and
// budget.Unlimited, wherever they are used as values.
func (m *checker) values(f *ast.File) {
	info := m.p.TypesInfo
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			return false // a comparison such as j == backoff.None is fine
		case *ast.CaseClause:
			for _, s := range n.Body { // not the case values
				ast.Inspect(s, visit)
			}
			return false
		case *ast.CompositeLit:
			if !match.Named(info.TypeOf(n), backoffPath, "Schedule") {
				return true
			}
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				k, _ := kv.Key.(*ast.Ident)
				switch {
				case k == nil:
				case k.Name == "Jitter" && m.isNone(kv.Value):
					m.p.Report(kv, "backoff.Schedule without jitter (backoff.None) outside tests: clients that failed together retry in lockstep; leave Jitter zero (backoff.Full)")
				case k.Name == "Immediate" && isTrue(info, kv.Value):
					m.p.Report(kv, "backoff.Schedule with Immediate outside tests: retries run back to back, with no wait at all; remove Immediate and keep the default schedule (full jitter)")
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				sel, ok := lhs.(*ast.SelectorExpr)
				if !ok || i >= len(n.Rhs) || sel.Sel.Name != "Jitter" || !match.Named(info.TypeOf(sel.X), backoffPath, "Schedule") {
					continue
				}
				if m.isNone(n.Rhs[i]) {
					m.p.Report(n, "backoff.Schedule without jitter (backoff.None) outside tests: clients that failed together retry in lockstep; leave Jitter zero (backoff.Full)")
				}
			}
		case *ast.SelectorExpr:
			if match.Object(info.Uses[n.Sel], budgetPath, "Unlimited") {
				m.p.Report(n, "retry budget turned off (budget.Unlimited): during an outage every call makes all its attempts, multiplying the load on a dependency that is already down; leave retry.Config.Budget nil (a token bucket per Policy) or share a budget.Ratio")
			}
		}
		return true
	}
	ast.Inspect(f, visit)
}

func (m *checker) isNone(e ast.Expr) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		return match.Object(m.p.TypesInfo.Uses[e.Sel], backoffPath, "None")
	case *ast.Ident:
		return match.Object(m.p.TypesInfo.Uses[e], backoffPath, "None")
	}
	return false
}

func isTrue(info *types.Info, e ast.Expr) bool {
	tv := info.Types[e]
	return tv.Value != nil && tv.Value.String() == "true"
}

// builders are the constructors of per-dependency state.
var builders = map[string][]string{
	retryPath:  {"New", "Default"},
	budgetPath: {"NewTokenBucket", "NewRatio", "NewGRPC"},
	httpPath:   {"NewTransport"},
}

// fn checks the constructor calls in body. name is the function's name
// ("" for a literal); inHandler says a handler encloses body.
func (m *checker) fn(body *ast.BlockStmt, name string, sig *types.Signature, inHandler bool) {
	info := m.p.TypesInfo
	inHandler = inHandler || match.IsHandler(sig)
	var visit func(n ast.Node, loop *ast.BlockStmt)
	visit = func(n ast.Node, loop *ast.BlockStmt) {
		ast.Inspect(n, func(k ast.Node) bool {
			switch k := k.(type) {
			case *ast.FuncLit:
				s, _ := info.TypeOf(k).(*types.Signature)
				m.fn(k.Body, "", s, inHandler)
				return false
			case *ast.ForStmt:
				visit(k.Body, k.Body)
				return false
			case *ast.RangeStmt:
				visit(k.Body, k.Body)
				return false
			case *ast.CallExpr:
				m.call(k, body, loop, name, inHandler)
			}
			return true
		})
	}
	visit(body, nil)
}

// call reports a constructor call that builds retry state per call: in a
// loop (loop is the innermost loop's body), in an HTTP handler, or (for a
// Policy) in a function that uses it at once, when what it builds stays
// local to that scope.
func (m *checker) call(call *ast.CallExpr, body, loop *ast.BlockStmt, name string, inHandler bool) {
	info := m.p.TypesInfo
	fn := match.Callee(info, call)
	if fn == nil || fn.Pkg() == nil {
		return
	}
	names, ok := builders[fn.Pkg().Path()]
	if !ok || !match.Func(fn, fn.Pkg().Path(), names...) {
		return
	}
	scope := body
	if loop != nil {
		scope = loop
	}
	if fn.Pkg().Path() == retryPath {
		if !usedHere(info, call, scope) || (loop == nil && !inHandler && (name == "main" || name == "init")) {
			return
		}
	} else if (loop == nil && !inHandler) || !local(info, call, scope) {
		return
	}
	what := fn.Pkg().Name() + "." + fn.Name()
	const share = "build it once per dependency (a package variable or a field) and share it"
	switch {
	case loop != nil:
		m.p.Report(call, what+" inside a loop builds new retry state, with a full retry budget, on every iteration, and it is dropped after one use: the budget never sees the other calls and never stops a storm; "+share)
	case inHandler:
		m.p.Report(call, what+" inside an HTTP handler builds new retry state, with a full retry budget, for every request: the budget never sees the other requests and never stops a storm; "+share)
	default:
		m.p.Report(call, what+" builds a Policy, with a full retry budget, on every call of the function that uses it: the budget never sees the other calls and never stops a storm; "+share)
	}
}

// local reports whether what call builds is bound to a new variable in
// scope that never leaves it: not returned, sent, appended, or assigned
// to a field, an element or a variable declared elsewhere, itself or
// through a value built from it (a retry.Config holding a budget).
func local(info *types.Info, call *ast.CallExpr, scope *ast.BlockStmt) bool {
	obj := bound(info, call, scope)
	return obj != nil && !leaves(info, obj, scope, 0)
}

func leaves(info *types.Info, obj types.Object, scope *ast.BlockStmt, depth int) bool {
	if depth > 4 {
		return true
	}
	// mentions reports whether n uses obj as a value (not as the receiver
	// of a method call or a field access).
	mentions := func(n ast.Node) bool {
		skip := func(k ast.Node) bool {
			sel, ok := k.(*ast.SelectorExpr)
			if !ok {
				return false
			}
			id, ok := ast.Unparen(sel.X).(*ast.Ident)
			return ok && info.Uses[id] == obj
		}
		return match.Any(n, skip, func(k ast.Node) bool {
			id, ok := k.(*ast.Ident)
			return ok && info.Uses[id] == obj
		})
	}
	out := false
	ast.Inspect(scope, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ReturnStmt:
			out = mentions(n)
		case *ast.SendStmt:
			out = mentions(n.Value)
		case *ast.AssignStmt:
			for i, r := range n.Rhs {
				if !mentions(r) {
					continue
				}
				if n.Tok != token.DEFINE {
					out = true
				} else if id, ok := n.Lhs[min(i, len(n.Lhs)-1)].(*ast.Ident); ok && info.Defs[id] != nil {
					out = leaves(info, info.Defs[id], scope, depth+1)
				}
			}
		case *ast.CallExpr:
			if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok && id.Name == "append" {
				out = mentions(n)
			}
		}
		return !out
	})
	return out
}

// bound returns the variable that a := statement in scope binds to the
// (first) result of call, or nil.
func bound(info *types.Info, call *ast.CallExpr, scope *ast.BlockStmt) types.Object {
	var obj types.Object
	ast.Inspect(scope, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && as.Tok == token.DEFINE && len(as.Rhs) == 1 && ast.Unparen(as.Rhs[0]) == ast.Expr(call) {
			if id, ok := as.Lhs[0].(*ast.Ident); ok && id.Name != "_" {
				obj = info.Defs[id]
			}
		}
		return obj == nil
	})
	return obj
}

// usedHere reports whether the Policy call builds is used for a call in
// body and nowhere else: p.Do or retry.DoValue(ctx, p, ...) only, never
// returned, stored or passed on.
func usedHere(info *types.Info, call *ast.CallExpr, body *ast.BlockStmt) bool {
	used, escapes := false, false
	obj := bound(info, call, body)
	if obj == nil {
		// retry.Default().Do(...)
		ast.Inspect(body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && ast.Unparen(sel.X) == ast.Expr(call) && sel.Sel.Name == "Do" {
				used = true
			}
			return !used
		})
		return used
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && info.ObjectOf(id) == obj {
				if n.Sel.Name == "Do" {
					used = true
				}
				return false
			}
		case *ast.CallExpr:
			if match.Func(match.Callee(info, n), retryPath, "DoValue") && len(n.Args) == 3 {
				if id, ok := ast.Unparen(n.Args[1]).(*ast.Ident); ok && info.ObjectOf(id) == obj {
					used = true
					for _, a := range []ast.Expr{n.Args[0], n.Args[2]} {
						ast.Inspect(a, func(k ast.Node) bool {
							if kid, ok := k.(*ast.Ident); ok && info.ObjectOf(kid) == obj {
								escapes = true
							}
							return true
						})
					}
					return false
				}
			}
		case *ast.Ident:
			if info.ObjectOf(n) == obj && info.Defs[n] == nil {
				escapes = true // returned, stored, passed, captured
			}
		}
		return true
	})
	return used && !escapes
}
