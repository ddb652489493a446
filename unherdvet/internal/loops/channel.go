package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

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
// a range over the channel, of the statements before the attempt). A
// round that does not wait is a retry loop only when its attempt calls
// another service.
func (f *finder) channelRounds(fn *Func) []*Loop {
	return loopsOf(fn, func(s ast.Stmt) *Loop {
		switch s := s.(type) {
		case *ast.ForStmt:
			if !f.forBodies[s.Body] {
				return f.channelRound(fn, s, s.Body, nil)
			}
		case *ast.RangeStmt:
			if ch := f.chanObj(s.X); ch != nil {
				return f.channelRound(fn, s, s.Body, ch)
			}
		}
		return nil
	})
}

// chanObj returns the variable or field a channel expression names
// (ch, c.retryCh), or nil.
func (f *finder) chanObj(e ast.Expr) types.Object {
	v := match.VarOf(f.info, e)
	if v == nil {
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
	x := recvOperand(comm)
	if x == nil {
		return nil
	}
	return f.chanObj(x)
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
			if call == nil || f.cannotFail(call) || f.errCond(ifs.Cond, errv, call) != token.NEQ {
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
			if len(l.Waits) == 0 && !match.RemoteDeep(f.info, f.bodies, call, 3) {
				// A consumer that puts back an item its local work
				// failed on; a remote call sent again at once is a
				// retry without a wait.
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
