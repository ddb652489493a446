package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// varies reports whether the loop changes what the attempt is given from
// one iteration to the next, so that it tries something new rather than
// the same call again: an argument or receiver indexed by the loop
// variable or by a counter the body advances (addrs[i]: failover;
// batches[it.index]: iteration), a variable the post statement or the
// body after the call reassigns (a page token, a growing list: search and
// pagination), or one drawn from the clock or a random source before the
// call (a new unique key on each conflict).
//
// scope is the code whose assignments count: the loop's body, or for a
// reconnect loop only the failure path (a long poll moves its cursor on
// after a success, and tries the same again after a failure).
func (f *finder) varies(l *Loop, call *ast.CallExpr, scope ast.Node) bool {
	counters := make(map[types.Object]bool) // index variables
	changed := make(map[types.Object]bool)  // values that change
	mark := func(m map[types.Object]bool, e ast.Expr) {
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			if o := f.info.ObjectOf(id); o != nil {
				m[o] = true
			}
		}
	}
	// markIndex marks a variable or a field (it.index) as an index.
	markIndex := func(e ast.Expr) {
		if sel, ok := ast.Unparen(e).(*ast.SelectorExpr); ok {
			e = sel.Sel
		}
		mark(counters, e)
	}
	// A loop with no counter that picks the next address each round
	// goes round the list for ever: each address is tried again after a
	// pass, a reconnect rather than a failover that ends.
	cycles := false
	if fs, ok := l.Stmt.(*ast.ForStmt); ok && fs.Init == nil && fs.Post == nil && (fs.Cond == nil || !f.counts(fs.Cond)) {
		cycles = true
	}
	switch s := l.Stmt.(type) {
	case *ast.ForStmt:
		if s.Post == nil {
			break
		}
		ast.Inspect(s.Post, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IncDecStmt:
				markIndex(n.X)
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					mark(counters, lhs)
					mark(changed, lhs)
				}
			}
			return true
		})
	case *ast.RangeStmt:
		mark(counters, s.Key)
		mark(counters, s.Value)
	}
	ast.Inspect(scope, func(n ast.Node) bool {
		if inc, ok := n.(*ast.IncDecStmt); ok && inc.Pos() > call.End() {
			markIndex(inc.X) // it.index++ after the call
		}
		as, ok := n.(*ast.AssignStmt)
		if !ok || contains(as, call) {
			return !ok
		}
		after := as.Pos() > call.End()
		fresh := !after && f.drawsFresh(as, !cycles)
		if after || fresh {
			for _, lhs := range as.Lhs {
				mark(changed, lhs)
			}
		}
		return true
	})
	// A value taken, before the call, from one that changes (cur :=
	// servers[index], with index moved on after the call) changes too.
	// refers reports whether e names a changed variable, or indexes with
	// an identifier that indexes accepts.
	refers := func(e ast.Node, indexes func(types.Object) bool) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				ast.Inspect(n.Index, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok && indexes(f.info.ObjectOf(id)) {
						found = true
					}
					return !found
				})
			case *ast.Ident:
				found = found || changed[f.info.ObjectOf(n)]
			}
			return !found
		})
		return found
	}
	derives := func(e ast.Expr) bool {
		return refers(e, func(o types.Object) bool { return counters[o] || changed[o] })
	}
	ast.Inspect(scope, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Pos() > call.Pos() || contains(as, call) || len(as.Lhs) != len(as.Rhs) {
			return !ok
		}
		for i, lhs := range as.Lhs {
			if derives(as.Rhs[i]) {
				mark(changed, lhs)
			}
		}
		return true
	})
	return refers(call, func(o types.Object) bool { return counters[o] })
}

// drawsFresh reports whether an assignment receives from a channel (the
// next item a consumer handles), or its values call time.Now, a random
// source, or a function that picks the next of several
// (r.nextLookupdEndpoint(), p.selectMessageQueue(msg, last): failover to
// another address).
//
// rotation says whether picking the next of several counts.
func (f *finder) drawsFresh(as *ast.AssignStmt, rotation bool) bool {
	found := false
	for _, r := range as.Rhs {
		if u, ok := ast.Unparen(r).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
			return true // msg, ok := <-incoming: the next item
		}
		ast.Inspect(r, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				fn := match.Callee(f.info, c)
				found = found || match.IsRand(fn) || match.Func(fn, "time", "Now") || (rotation && rotates(fn))
			}
			return !found
		})
	}
	return found
}

// unwraps reports whether call derives its error from the attempt's own
// error rather than trying something again: err = errors.Unwrap(err), err
// = u.Unwrap() after switch u := err.(type), err = wrap(err). A loop over
// an error's chain is not a retry loop.
func (f *finder) unwraps(call *ast.CallExpr, errv types.Object) bool {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && (sel.Sel.Name == "Unwrap" || sel.Sel.Name == "Cause") {
		return true
	}
	if errv == nil {
		return false
	}
	return match.Mentions(f.info, call, errv)
}

// rotates reports whether fn is named for picking the next of several:
// next..., pick..., choose..., rotate..., select... (selectQueue(msg,
// lastBroker)).
func rotates(fn *types.Func) bool {
	if fn == nil {
		return false
	}
	n := strings.ToLower(fn.Name())
	for _, p := range []string{"next", "pick", "choose", "rotate", "select"} {
		if strings.HasPrefix(n, p) && n != "next" {
			return true
		}
	}
	return false
}

// counts reports whether cond compares numbers (i < n, tries <= max): a
// loop bounded by a count.
func (f *finder) counts(cond ast.Expr) bool {
	found := false
	ast.Inspect(cond, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok {
			switch b.Op {
			case token.LSS, token.LEQ, token.GTR, token.GEQ:
				if t, ok := f.info.TypeOf(b.X).Underlying().(*types.Basic); ok && t.Info()&types.IsNumeric != 0 {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
