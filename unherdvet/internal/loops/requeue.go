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
		found := false
		for _, s := range stmts {
			ast.Inspect(s, func(n ast.Node) bool {
				if _, lit := n.(*ast.FuncLit); lit || found {
					return false
				}
				a, ok := n.(*ast.AssignStmt)
				if !ok || len(a.Lhs) != 1 || len(a.Rhs) != 1 || f.sliceVar(a.Lhs[0]) != failed {
					return true
				}
				c, ok := ast.Unparen(a.Rhs[0]).(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, ok := ast.Unparen(c.Fun).(*ast.Ident); ok && id.Name == "append" && len(c.Args) > 1 && f.sliceVar(c.Args[0]) == failed {
					found = true
				}
				return !found
			})
		}
		return found
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
				if c != nil && !match.Pure(match.Callee(f.info, c)) {
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

// channelRounds finds, in fn outside its function literals, retries
// that go round through a channel: a loop that receives from a channel
// (ranges over it, or selects on it) and makes an attempt whose failure
// path sends back to that channel, directly, from a goroutine or timer
// callback it starts there, or through a function of the package that
// sends; the next round's attempt comes from that receive.
//
//	for {
//		select {
//		case <-stop:
//			return
//		case <-trigger:
//			retry = time.After(backoff)
//		case <-retry:
//			if err := dispatch(); err != nil {
//				redispatch() // trigger <- struct{}{}
//			}
//		}
//	}
//
// The waits are those of the failure path, of the goroutine or callback
// that sends, and of the select case that receives what it sent (or, in
// a range over the channel, of the statements before the attempt). Only
// rounds that wait are retry loops here.
func (f *finder) channelRounds(fn *Func) []*Loop {
	var out []*Loop
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt:
			if !f.forBodies[n.Body] {
				if l := f.channelRound(fn, n, n.Body, nil); l != nil {
					out = append(out, l)
				}
			}
		case *ast.RangeStmt:
			if ch := f.chanObj(n.X); ch != nil {
				if l := f.channelRound(fn, n, n.Body, ch); l != nil {
					out = append(out, l)
				}
			}
		}
		return true
	})
	return out
}

// chanObj returns the variable or field a channel expression names
// (ch, c.retryCh), or nil.
func (f *finder) chanObj(e ast.Expr) types.Object {
	var obj types.Object
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		obj = f.info.ObjectOf(e)
	case *ast.SelectorExpr:
		obj = f.info.ObjectOf(e.Sel)
	}
	v, ok := obj.(*types.Var)
	if !ok {
		return nil
	}
	if _, ok := v.Type().Underlying().(*types.Chan); !ok {
		return nil
	}
	return v
}

// recvChan returns the channel a select case's comm receives from, or
// nil.
func (f *finder) recvChan(comm ast.Stmt) types.Object {
	var x ast.Expr
	switch c := comm.(type) {
	case *ast.ExprStmt:
		x = c.X
	case *ast.AssignStmt:
		if len(c.Rhs) == 1 {
			x = c.Rhs[0]
		}
	}
	u, ok := ast.Unparen(x).(*ast.UnaryExpr)
	if !ok || u.Op != token.ARROW {
		return nil
	}
	return f.chanObj(u.X)
}

// channelRound matches the loop stmt with body: ranged, its channel
// over, or one whose top-level selects receive from channels.
func (f *finder) channelRound(fn *Func, stmt ast.Stmt, body *ast.BlockStmt, over types.Object) *Loop {
	// The channels the loop receives from, with the case that does.
	cases := make(map[types.Object]*ast.CommClause)
	for _, s := range body.List {
		sel, ok := s.(*ast.SelectStmt)
		if !ok {
			continue
		}
		for _, c := range sel.Body.List {
			cc := c.(*ast.CommClause)
			if cc.Comm == nil {
				continue
			}
			if ch := f.recvChan(cc.Comm); ch != nil {
				cases[ch] = cc
			}
		}
	}
	if over == nil && len(cases) == 0 {
		return nil
	}
	var found *Loop
	ast.Inspect(body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return false
		}
		blk, ok := n.(*ast.BlockStmt)
		if !ok {
			if cc, ok := n.(*ast.CommClause); ok {
				blk = &ast.BlockStmt{List: cc.Body}
			} else if cc, ok := n.(*ast.CaseClause); ok {
				blk = &ast.BlockStmt{List: cc.Body}
			} else {
				return true
			}
		}
		for k, s := range blk.List {
			ifs, ok := s.(*ast.IfStmt)
			if !ok {
				continue
			}
			call, errv, results := f.errCall(ifs)
			if call == nil && k > 0 {
				call, errv, results = f.errCall(blk.List[k-1])
			}
			if call == nil || match.Pure(match.Callee(f.info, call)) || f.errCond(ifs.Cond, errv, call) != token.NEQ {
				continue
			}
			failure := ifs.Body.List
			ch, lits, timers := f.sendsTo(failure, over, cases)
			if ch == nil {
				continue
			}
			l := &Loop{Stmt: stmt, Body: body, Func: fn, Call: call, Err: errv, Results: results, Branch: ifs.Cond,
				Label: f.labels[stmt], At: stmt, Shape: Requeue}
			l.Between = append(l.Between, failure...)
			if cc := cases[ch]; cc != nil && !contains(cc, call) {
				l.Between = append(l.Between, &ast.SelectStmt{Body: &ast.BlockStmt{List: []ast.Stmt{cc}}})
			} else if over != nil {
				top := slices.IndexFunc(body.List, func(t ast.Stmt) bool { return contains(t, call) })
				l.Between = append(l.Between, body.List[:max(top, 0)]...)
			}
			l.Waits = append(f.waits(l), timers...)
			for _, lit := range lits {
				l.Waits = append(l.Waits, f.waits(&Loop{Func: fn, Between: lit.Body.List})...)
			}
			if len(l.Waits) == 0 {
				continue
			}
			l.Bounded = over != nil || f.guardedExit(l, body.List, false, false)
			found = l
			return false
		}
		return true
	})
	return found
}

// sendsTo returns the channel, among over and the keys of cases, that
// stmts send to: ch <- v, in a goroutine or a time.AfterFunc callback
// they start (returned as lits, whose waits run between attempts too,
// and timers, the AfterFunc calls as waits),
// or in the body of a function of the package they call; or nil.
func (f *finder) sendsTo(stmts []ast.Stmt, over types.Object, cases map[types.Object]*ast.CommClause) (types.Object, []*ast.FuncLit, []*Wait) {
	ours := func(o types.Object) bool {
		_, ok := cases[o]
		return o != nil && (o == over || ok)
	}
	var ch types.Object
	var lits []*ast.FuncLit
	var timers []*Wait
	var visit func(n ast.Node, lit *ast.FuncLit, depth int)
	visit = func(n ast.Node, lit *ast.FuncLit, depth int) {
		ast.Inspect(n, func(m ast.Node) bool {
			if ch != nil {
				return false
			}
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.GoStmt:
				if fl, ok := ast.Unparen(m.Call.Fun).(*ast.FuncLit); ok && lit == nil {
					visit(fl.Body, fl, depth)
					return false
				}
			case *ast.SendStmt:
				if o := f.chanObj(m.Chan); ours(o) {
					ch = o
					if lit != nil {
						lits = append(lits, lit)
					}
				}
			case *ast.CallExpr:
				fn := match.Callee(f.info, m)
				if match.Func(fn, "time", "AfterFunc") && len(m.Args) == 2 && lit == nil {
					if fl, ok := ast.Unparen(m.Args[1]).(*ast.FuncLit); ok {
						visit(fl.Body, fl, depth)
						if ch != nil {
							timers = append(timers, &Wait{Call: m, Delay: m.Args[0], Kind: Timer})
						}
					}
					return false
				}
				if body := f.bodies[fn]; body != nil && depth > 0 {
					visit(body, lit, depth-1)
				}
			}
			return true
		})
	}
	for _, s := range stmts {
		visit(s, nil, 1)
	}
	return ch, lits, timers
}

// passes finds, in fn outside its function literals, reconnect loops
// that make a pass over a list of addresses each round: a for statement
// whose body holds, at its top level, a range over the list that tries
// each one and returns on the first success, and that goes round when
// every one failed.
//
//	for {
//		for _, addr := range addrs {
//			conn, err := dial(addr)
//			if err != nil {
//				continue
//			}
//			return conn, nil
//		}
//		time.Sleep(d)
//	}
//
// The pass alone is failover; the round that repeats it is a retry, and
// its waits are the for statement's.
func (f *finder) passes(fn *Func) []*Loop {
	var out []*Loop
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt:
			if f.forBodies[n.Body] || n.Init != nil || n.Post != nil {
				return true
			}
			for _, s := range n.Body.List {
				r, ok := s.(*ast.RangeStmt)
				if !ok {
					continue
				}
				pass := &Loop{Stmt: r, Body: r.Body, Func: fn, Label: f.labels[r], At: r}
				if !f.attempt(pass) || pass.Endless {
					continue
				}
				if _, ret := pass.Success.(*ast.ReturnStmt); !ret {
					continue
				}
				l := &Loop{Stmt: n, Body: n.Body, Func: fn, Call: pass.Call, Err: pass.Err, Results: pass.Results,
					Branch: pass.Branch, Success: pass.Success, Label: f.labels[n], At: n, Shape: For, Between: n.Body.List}
				if l.Waits = f.waits(l); len(l.Waits) == 0 {
					continue
				}
				l.Bounded = (n.Cond != nil && f.other(l, n.Cond)) || f.guardedExit(l, n.Body.List, false, false)
				out = append(out, l)
				break
			}
		}
		return true
	})
	return out
}
