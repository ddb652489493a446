package loops

import (
	"go/ast"
)

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
	return loopsOf(fn, func(s ast.Stmt) *Loop {
		n, ok := s.(*ast.ForStmt)
		if !ok || f.forBodies[n.Body] || n.Init != nil || n.Post != nil {
			return nil
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
			return l
		}
		return nil
	})
}

// loopsOf walks fn's body outside its function literals and returns the
// loops that visit makes of its for and range statements.
func loopsOf(fn *Func, visit func(s ast.Stmt) *Loop) []*Loop {
	var out []*Loop
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt, *ast.RangeStmt:
			if l := visit(n.(ast.Stmt)); l != nil {
				out = append(out, l)
			}
		}
		return true
	})
	return out
}
