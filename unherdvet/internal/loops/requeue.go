package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// requeues finds, in fn outside its function literals, retries of a
// list of items: a loop over a list that makes an attempt for each item,
// keeps the items whose attempt failed in another list, and hands that
// list on as the next round's (a retry queue).
//
//	for {
//		select {
//		case <-done:
//			return
//		case <-time.After(interval):
//			var failed []*request
//			for _, r := range pending {
//				if err := r.send(); err != nil {
//					failed = append(failed, r)
//				}
//			}
//			pending = failed
//		}
//	}
//
// The round is the for statement around the hand-over (pending =
// failed), or a goto back to a label before the list's loop (if
// len(failed) > 0 { msgs = failed; time.Sleep(d); goto retry }). The
// attempt may return an error or, when it goes to another service, a
// boolean that says it was done. Only rounds that wait are retry loops
// here: one that goes round at once is more often a queue being
// drained.
func (f *finder) requeues(fn *Func) []*Loop {
	var out []*Loop
	var stack []ast.Node
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if _, lit := n.(*ast.FuncLit); lit {
			return false
		}
		stack = append(stack, n)
		if as, ok := n.(*ast.AssignStmt); ok {
			if l := f.requeue(fn, as, stack); l != nil {
				out = append(out, l)
			}
		}
		return true
	})
	return out
}

// requeue returns the retry of a list that the hand-over as (next =
// failed) ends a round of, or nil; stack holds as and the nodes around
// it, outermost first.
func (f *finder) requeue(fn *Func, as *ast.AssignStmt, stack []ast.Node) *Loop {
	if as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return nil
	}
	next, failed := f.sliceVar(as.Lhs[0]), f.sliceVar(as.Rhs[0])
	if next == nil || failed == nil || next == failed {
		return nil
	}
	// A round made by an enclosing for statement.
	for k := len(stack) - 2; k >= 0; k-- {
		var body *ast.BlockStmt
		switch s := stack[k].(type) {
		case *ast.ForStmt:
			body = s.Body
		case *ast.RangeStmt:
			body = s.Body
		default:
			continue
		}
		if f.forBodies[body] {
			return nil // already a retry loop of its own
		}
		call, errv, results, cond := f.keepsFailed(body, next, failed, as)
		if call == nil {
			continue
		}
		l := &Loop{Stmt: stack[k].(ast.Stmt), Body: body, Func: fn, Call: call, Err: errv, Results: results,
			Branch: cond, Label: f.labels[stack[k].(ast.Stmt)], At: stack[k], Shape: Requeue, Between: body.List}
		return f.keepRound(l)
	}
	// A round made by a goto back to a label: the hand-over's block ends
	// with the goto, and the label is on a statement of an enclosing
	// block before it.
	blk, ok := stack[len(stack)-2].(*ast.BlockStmt)
	if !ok || len(blk.List) == 0 {
		return nil
	}
	gt, ok := blk.List[len(blk.List)-1].(*ast.BranchStmt)
	if !ok || gt.Tok != token.GOTO || gt.Label == nil {
		return nil
	}
	for k := len(stack) - 3; k >= 0; k-- {
		outer, ok := stack[k].(*ast.BlockStmt)
		if !ok {
			continue
		}
		for i, s := range outer.List {
			ls, ok := s.(*ast.LabeledStmt)
			if !ok || ls.Label.Name != gt.Label.Name || ls.Pos() > as.Pos() {
				continue
			}
			end := slices.IndexFunc(outer.List, func(t ast.Stmt) bool { return contains(t, as) })
			if end < i {
				return nil
			}
			span := &ast.BlockStmt{Lbrace: ls.Pos(), List: outer.List[i : end+1], Rbrace: gt.End() - 1}
			call, errv, results, cond := f.keepsFailed(span, next, failed, as)
			if call == nil {
				return nil
			}
			l := &Loop{Stmt: span, Body: span, Func: fn, Call: call, Err: errv, Results: results,
				Branch: cond, Label: ls.Label, At: gt, Shape: Requeue, Between: blk.List}
			return f.keepRound(l)
		}
	}
	return nil
}

// keepRound finishes a retry of a list: its waits and whether anything
// else ends it. It returns nil when nothing between rounds waits.
func (f *finder) keepRound(l *Loop) *Loop {
	if l.Waits = f.waits(l); len(l.Waits) == 0 {
		return nil
	}
	l.Bounded = f.guardedExit(l, l.Body.List, false, false)
	return l
}

// sliceVar returns the variable of slice type e names, or nil.
func (f *finder) sliceVar(e ast.Expr) *types.Var {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := f.info.ObjectOf(id).(*types.Var)
	if !ok {
		return nil
	}
	if _, ok := v.Type().Underlying().(*types.Slice); !ok {
		return nil
	}
	return v
}

// keepsFailed finds, in body before the hand-over as, a loop over the
// list next (a range over it, or a for statement whose condition names
// it) that appends to failed (failed = append(failed, item)) when an
// attempt for the item fails. It returns that attempt, its error
// variable and other results, and the condition that tells the failure;
// or a nil call.
func (f *finder) keepsFailed(body *ast.BlockStmt, next, failed *types.Var, as *ast.AssignStmt) (call *ast.CallExpr, errv types.Object, results []types.Object, cond ast.Expr) {
	ast.Inspect(body, func(n ast.Node) bool {
		if call != nil || n == nil || n.Pos() >= as.Pos() {
			return false
		}
		var inner *ast.BlockStmt
		switch s := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.RangeStmt:
			if id, ok := ast.Unparen(s.X).(*ast.Ident); ok && f.info.ObjectOf(id) == next {
				inner = s.Body
			}
		case *ast.ForStmt:
			if s.Cond != nil && match.Mentions(f.info, s.Cond, next) {
				inner = s.Body
			}
		}
		if inner != nil {
			call, errv, results, cond = f.failedAppend(inner, failed)
		}
		return call == nil
	})
	return call, errv, results, cond
}

// failedAppend finds in body an append to failed on the failure branch of
// an attempt: if err := call(); err != nil { failed = append(failed, x)
// }, the same with the call in the statement before the if, or if
// call() { ... } else { failed = append(failed, x) } (and if !call())
// for a call to another service that answers with a boolean.
func (f *finder) failedAppend(body *ast.BlockStmt, failed *types.Var) (call *ast.CallExpr, errv types.Object, results []types.Object, cond ast.Expr) {
	appends := func(stmts []ast.Stmt) bool {
		skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
		return slices.ContainsFunc(stmts, func(s ast.Stmt) bool {
			return match.Any(s, skip, func(n ast.Node) bool {
				a, ok := n.(*ast.AssignStmt)
				if !ok || len(a.Lhs) != 1 || len(a.Rhs) != 1 || f.sliceVar(a.Lhs[0]) != failed {
					return false
				}
				c, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
				if !ok {
					return false
				}
				id, ok := ast.Unparen(c.Fun).(*ast.Ident)
				return ok && id.Name == "append" && len(c.Args) > 1 && f.sliceVar(c.Args[0]) == failed
			})
		})
	}
	var elseList []ast.Stmt
	ast.Inspect(body, func(n ast.Node) bool {
		if call != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.BlockStmt:
			for k, s := range n.List {
				ifs, ok := s.(*ast.IfStmt)
				if !ok {
					continue
				}
				elseList = nil
				if eb, ok := ifs.Else.(*ast.BlockStmt); ok {
					elseList = eb.List
				}
				c, v, rs := f.errCall(ifs)
				if c == nil && k > 0 {
					c, v, rs = f.errCall(n.List[k-1])
				}
				if c != nil && !f.cannotFail(c) {
					switch f.errCond(ifs.Cond, v, c) {
					case token.NEQ:
						if appends(ifs.Body.List) {
							call, errv, results, cond = c, v, rs, ifs.Cond
						}
					case token.EQL:
						if appends(elseList) {
							call, errv, results, cond = c, v, rs, ifs.Cond
						}
					}
					if call != nil {
						return false
					}
				}
				// if send(x) { ok = append(ok, x) } else { failed = append(failed, x) }
				test, neg := ast.Unparen(ifs.Cond), false
				if u, ok := test.(*ast.UnaryExpr); ok && u.Op == token.NOT {
					test, neg = ast.Unparen(u.X), true
				}
				c, ok = test.(*ast.CallExpr)
				if !ok || !types.Identical(f.info.TypeOf(c), types.Typ[types.Bool]) || !match.RemoteDeep(f.info, f.bodies, c, 3) {
					continue
				}
				if (neg && appends(ifs.Body.List)) || (!neg && appends(elseList)) {
					call, cond = c, ifs.Cond
					return false
				}
			}
		}
		return true
	})
	return call, errv, results, cond
}
