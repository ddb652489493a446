package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// waits returns the waits that run between attempts.
func (f *finder) waits(l *Loop) []*Wait {
	var out []*Wait
	var self *types.Func
	if fd, ok := l.Func.Outermost().Node.(*ast.FuncDecl); ok {
		self, _ = f.info.Defs[fd.Name].(*types.Func)
	}
	var visit func(n ast.Node, inSelect bool)
	visit = func(n ast.Node, inSelect bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
				return false
			case *ast.SelectStmt:
				other := false
				for _, c := range m.Body.List {
					if comm := c.(*ast.CommClause).Comm; comm != nil && !f.timerRecv(comm) {
						other = true
					}
				}
				for _, c := range m.Body.List {
					cc := c.(*ast.CommClause)
					if cc.Comm != nil {
						visit(cc.Comm, other)
					}
					for _, s := range cc.Body {
						visit(s, false)
					}
				}
				return false
			case *ast.CallExpr:
				if self != nil && match.Callee(f.info, m) == self {
					// The recursive call that repeats the attempt; what its
					// arguments do (take a rate limiter's token) is part of
					// the next attempt.
					return false
				}
				if w := f.wait(m, inSelect); w != nil {
					out = append(out, w)
				}
			}
			return true
		})
	}
	for _, s := range l.Between {
		visit(s, false)
	}
	return out
}

// wait returns the wait that call is, or nil.
func (f *finder) wait(call *ast.CallExpr, inSelect bool) *Wait {
	fn := match.Callee(f.info, call)
	if i, ok := f.helpers[fn]; ok && i < len(call.Args) {
		return &Wait{Call: call, Delay: call.Args[i], Kind: Helper}
	}
	if w, ok := f.sleepers[fn]; ok {
		return &Wait{Call: call, Delay: w.Delay, Kind: Helper, Scope: w.Scope}
	}
	if i, ok := timerFunc(fn); ok && i < len(call.Args) {
		k := After
		if inSelect {
			k = AfterCtx
		}
		return &Wait{Call: call, Delay: call.Args[i], Kind: k}
	}
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && fn == nil {
		if cw, ok := f.closures[f.info.Uses[id]]; ok {
			if cw.param >= 0 {
				if cw.param < len(call.Args) {
					return &Wait{Call: call, Delay: call.Args[cw.param], Kind: Helper}
				}
				return nil
			}
			return &Wait{Call: call, Delay: cw.wait.Delay, Kind: Helper, Scope: cw.wait.Scope}
		}
	}
	if len(call.Args) != 1 {
		return nil
	}
	if timerReset(fn) {
		return &Wait{Call: call, Delay: call.Args[0], Kind: Timer}
	}
	w := &Wait{Call: call, Delay: call.Args[0]}
	switch {
	case match.Func(fn, "time", "Sleep"):
		w.Kind = Sleep
	case match.Func(fn, "time", "After"):
		w.Kind = After
		if inSelect {
			w.Kind = AfterCtx
		}
	case match.Func(fn, "time", "NewTimer"), match.Method(fn, "time", "Timer", "Reset"):
		w.Kind = Timer
	default:
		return nil
	}
	return w
}

// timerFunc reports whether fn is a timer of another package: a function
// outside package time that takes one time.Duration and returns only a
// channel to receive from (cos.AfterSignal(d), clock.After(d)), with the
// index of that parameter.
func timerFunc(fn *types.Func) (int, bool) {
	if fn == nil || (fn.Pkg() != nil && fn.Pkg().Path() == "time") {
		return 0, false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Results().Len() != 1 {
		return 0, false
	}
	if ch, ok := sig.Results().At(0).Type().Underlying().(*types.Chan); !ok || ch.Dir() == types.SendOnly {
		return 0, false
	}
	idx := -1
	for i := range sig.Params().Len() {
		if match.Named(sig.Params().At(i).Type(), "time", "Duration") {
			if idx >= 0 {
				return 0, false
			}
			idx = i
		}
	}
	return idx, idx >= 0
}

// timerReset reports whether fn is the Reset method of a timer of
// another package than time (lazytime.Timer, a fake clock's Timer): a
// type named for a timer whose Reset takes one time.Duration.
func timerReset(fn *types.Func) bool {
	if fn == nil || fn.Name() != "Reset" || (fn.Pkg() != nil && fn.Pkg().Path() == "time") {
		return false
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || sig.Params().Len() != 1 || !match.Named(sig.Params().At(0).Type(), "time", "Duration") {
		return false
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && strings.Contains(strings.ToLower(n.Obj().Name()), "timer")
}

// recvOperand returns x of a select case's comm that receives <-x (as a
// statement, or assigned), or nil.
func recvOperand(comm ast.Stmt) ast.Expr {
	var x ast.Expr
	switch c := comm.(type) {
	case *ast.ExprStmt:
		x = c.X
	case *ast.AssignStmt:
		if len(c.Rhs) == 1 {
			x = c.Rhs[0]
		}
	}
	if u, ok := ast.Unparen(x).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return u.X
	}
	return nil
}

// timerRecv reports whether a select case receives from a timer:
// <-time.After(d) or <-t.C.
func (f *finder) timerRecv(comm ast.Stmt) bool {
	x := recvOperand(comm)
	if x == nil {
		return false
	}
	switch e := ast.Unparen(x).(type) {
	case *ast.CallExpr:
		fn := match.Callee(f.info, e)
		_, timer := timerFunc(fn)
		return timer || match.Func(fn, "time", "After", "Tick")
	case *ast.SelectorExpr:
		return e.Sel.Name == "C" && (match.Named(f.info.TypeOf(e.X), "time", "Timer") || match.Named(f.info.TypeOf(e.X), "time", "Ticker"))
	}
	return false
}

// waitFuncs finds the package's functions that wait. helpers wait for
// one of their time.Duration parameters (func sleep(ctx context.Context,
// d time.Duration) error { ... time.After(d) ... }), with that
// parameter's index, so that a loop calling one waits as surely as one
// calling time.Sleep. sleepers wait, outside function literals, a delay
// of their own making (sleep, _ := b.next(); time.Sleep(sleep)), with
// that wait's delay and the body it is in.
func waitFuncs(info *types.Info, files []*ast.File) (helpers map[*types.Func]int, sleepers map[*types.Func]*Wait) {
	helpers, sleepers = make(map[*types.Func]int), make(map[*types.Func]*Wait)
	for _, file := range files {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn, _ := info.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			params := fn.Type().(*types.Signature).Params()
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if _, lit := n.(*ast.FuncLit); lit {
					return false
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				c := match.Callee(info, call)
				if !match.Func(c, "time", "Sleep", "After", "NewTimer") && !match.Method(c, "time", "Timer", "Reset") {
					return true
				}
				if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok {
					for i := range params.Len() {
						if p := params.At(i); info.Uses[id] == p {
							if match.Named(p.Type(), "time", "Duration") {
								helpers[fn] = i
							}
							return true
						}
					}
				}
				if sleepers[fn] == nil {
					sleepers[fn] = &Wait{Call: call, Delay: call.Args[0], Scope: fd.Body}
				}
				return true
			})
		}
	}
	for fn := range helpers {
		delete(sleepers, fn) // the caller's delay decides
	}
	return helpers, sleepers
}

// A closureWait is the wait of a function literal held in a variable:
// for its parameter at index param, or, when param is -1, the delay of
// its own making that wait holds (Scope is the literal's body).
type closureWait struct {
	param int
	wait  *Wait
}

// closureWaits finds the function literals assigned to a variable (x :=
// func(...) { ... }) that wait, outside literals nested in them, with
// time.Sleep, time.After, time.NewTimer or Timer.Reset: a failure path
// that calls one waits as surely as one that sleeps itself.
func closureWaits(info *types.Info, files []*ast.File) map[types.Object]closureWait {
	out := make(map[types.Object]closureWait)
	for _, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			id, ok := as.Lhs[0].(*ast.Ident)
			lit, isLit := ast.Unparen(as.Rhs[0]).(*ast.FuncLit)
			if !ok || !isLit {
				return true
			}
			v := info.ObjectOf(id)
			sig, _ := info.TypeOf(lit).(*types.Signature)
			if v == nil || sig == nil {
				return true
			}
			ast.Inspect(lit.Body, func(m ast.Node) bool {
				if _, nested := m.(*ast.FuncLit); nested {
					return false
				}
				call, ok := m.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				c := match.Callee(info, call)
				if !match.Func(c, "time", "Sleep", "After", "NewTimer") && !match.Method(c, "time", "Timer", "Reset") {
					return true
				}
				if _, seen := out[v]; seen {
					return false
				}
				cw := closureWait{param: -1, wait: &Wait{Call: call, Delay: call.Args[0], Scope: lit.Body}}
				if pid, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok {
					for i := range sig.Params().Len() {
						if info.Uses[pid] == sig.Params().At(i) && match.Named(sig.Params().At(i).Type(), "time", "Duration") {
							cw.param = i
						}
					}
				}
				out[v] = cw
				return false
			})
			return true
		})
	}
	return out
}

// Ticked reports whether l's attempt sits in a case of a select, in the
// loop's body, that receives from a ticker (<-ticker.C of a time.Ticker,
// <-time.Tick(d)): every round, after a failure as after a success,
// waits for the next tick. It is periodic work, and a failure is not
// tried again at once.
func Ticked(info *types.Info, l *Loop) bool {
	if l.Shape != For || l.Call == nil {
		return false
	}
	skip := func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return true
		}
		return false
	}
	return match.Any(l.Body, skip, func(n ast.Node) bool {
		c, ok := n.(*ast.CommClause)
		if !ok || !contains(c, l.Call) || c.Comm == nil {
			return false
		}
		switch x := ast.Unparen(recvOperand(c.Comm)).(type) {
		case *ast.SelectorExpr:
			return x.Sel.Name == "C" && match.Named(info.TypeOf(x.X), "time", "Ticker")
		case *ast.CallExpr:
			return match.Func(match.Callee(info, x), "time", "Tick")
		}
		return false
	})
}
