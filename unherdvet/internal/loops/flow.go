package loops

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// flow is where a statement sends control, seen from the loop.
type flow int

const (
	stay  flow = iota // on to the next statement
	leave             // out of the loop: return, break, panic, os.Exit
	again             // to the next iteration: continue
)

// exits says where statement s, at the top level of the loop's body (or
// of an if's block there), sends control.
func (f *finder) exits(l *Loop, s ast.Stmt) flow {
	switch s := s.(type) {
	case *ast.ReturnStmt:
		return leave
	case *ast.BranchStmt:
		switch s.Tok {
		case token.GOTO:
			if f.toTop(l, s) || f.gotoTail(l, s) != nil {
				return again
			}
			return leave
		case token.BREAK:
			return leave
		case token.CONTINUE:
			if s.Label == nil || (l.Label != nil && s.Label.Name == l.Label.Name) {
				return again
			}
			return leave // continues an outer loop
		}
	case *ast.ExprStmt:
		if call, ok := s.X.(*ast.CallExpr); ok && f.noReturn(call) {
			return leave
		}
	case *ast.SelectStmt:
		// select { case <-time.After(d): continue; case <-ctx.Done():
		// return }: every case leaves or goes round, and one goes round.
		round := false
		for _, c := range s.Body.List {
			switch f.last(l, c.(*ast.CommClause).Body) {
			case again:
				round = true
			case stay:
				return stay
			}
		}
		if round {
			return again
		}
	}
	return stay
}

// toTop reports whether b is a goto to the label of the first statement
// of l's body (for { next: select { ... }; ...; goto next }): it goes
// round, like a continue.
func (f *finder) toTop(l *Loop, b *ast.BranchStmt) bool {
	if l.Shape != For || b.Label == nil || len(l.Body.List) == 0 {
		return false
	}
	if _, ok := l.Stmt.(*ast.ForStmt); !ok {
		return false
	}
	ls, ok := l.Body.List[0].(*ast.LabeledStmt)
	return ok && ls.Label.Name == b.Label.Name
}

// gotoTail returns the statements a goto b runs when it jumps forward to
// a label at the top level of l's body whose statements go round the
// loop: they end with a continue of this loop, or fall off the end of
// the body, and none of them leaves (for { resp, err := ping(); if err
// != nil { goto reconnect }; ...; continue; reconnect: delay = d;
// c.reconnect() }). It returns nil for any other goto.
func (f *finder) gotoTail(l *Loop, b *ast.BranchStmt) []ast.Stmt {
	if l.Shape != For || b.Tok != token.GOTO || b.Label == nil {
		return nil
	}
	if _, ok := l.Stmt.(*ast.ForStmt); !ok {
		return nil
	}
	for i, s := range l.Body.List {
		ls, ok := s.(*ast.LabeledStmt)
		if !ok || ls.Label.Name != b.Label.Name {
			continue
		}
		if i == 0 || ls.Pos() < b.Pos() {
			return nil // a label at the top or behind: see toTop and gotoLoop
		}
		if !f.terminates(l.Body.List[i-1]) {
			// The round before falls into the labelled statements too:
			// they are a poll's wait, shared by every outcome, not a
			// failure path (if done { return }; next: <-time.After(d)).
			return nil
		}
		tail := append([]ast.Stmt{ls.Stmt}, l.Body.List[i+1:]...)
		for k, t := range tail {
			switch t := t.(type) {
			case *ast.ReturnStmt:
				return nil
			case *ast.BranchStmt:
				if t.Tok == token.CONTINUE && (t.Label == nil || (l.Label != nil && t.Label.Name == l.Label.Name)) && k == len(tail)-1 {
					continue
				}
				return nil
			case *ast.ExprStmt:
				if call, ok := t.X.(*ast.CallExpr); ok && f.noReturn(call) {
					return nil
				}
			}
		}
		return append([]ast.Stmt{ls}, l.Body.List[i+1:]...)
	}
	return nil
}

// terminates reports whether control never falls out of s to the next
// statement: a return, goto or continue, a call that does not return, or
// an if with an else, a switch with a default or a select whose every
// branch ends so.
func (f *finder) terminates(s ast.Stmt) bool {
	ends := func(list []ast.Stmt) bool { return len(list) > 0 && f.terminates(list[len(list)-1]) }
	switch s := s.(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return s.Tok == token.GOTO || s.Tok == token.CONTINUE
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		return ok && f.noReturn(call)
	case *ast.BlockStmt:
		return ends(s.List)
	case *ast.LabeledStmt:
		return f.terminates(s.Stmt)
	case *ast.IfStmt:
		return s.Else != nil && ends(s.Body.List) && f.terminates(s.Else)
	case *ast.SwitchStmt, *ast.TypeSwitchStmt:
		var body *ast.BlockStmt
		if sw, ok := s.(*ast.SwitchStmt); ok {
			body = sw.Body
		} else {
			body = s.(*ast.TypeSwitchStmt).Body
		}
		def := false
		for _, c := range body.List {
			cc := c.(*ast.CaseClause)
			def = def || cc.List == nil
			if !ends(cc.Body) {
				return false
			}
		}
		return def
	case *ast.SelectStmt:
		for _, c := range s.Body.List {
			if !ends(c.(*ast.CommClause).Body) {
				return false
			}
		}
		return true
	}
	return false
}

// noReturn reports whether call never returns: panic, os.Exit, log.Fatal,
// t.Fatal (a test helper's loop that fails the test at a deadline is
// bounded).
func (f *finder) noReturn(call *ast.CallExpr) bool {
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "panic" {
		_, builtin := f.info.Uses[id].(*types.Builtin)
		return builtin
	}
	fn := match.Callee(f.info, call)
	for _, typ := range []string{"common", "T", "B", "F", "TB"} { // common: the methods T and B embed
		if match.Method(fn, "testing", typ, "Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow") {
			return true
		}
	}
	return match.Func(fn, "os", "Exit") ||
		match.Func(fn, "log", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln") ||
		match.Method(fn, "log", "Logger", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln")
}

// last says where the last of stmts sends control.
func (f *finder) last(l *Loop, stmts []ast.Stmt) flow {
	if len(stmts) == 0 {
		return stay
	}
	return f.exits(l, stmts[len(stmts)-1])
}

func (f *finder) anyTop(l *Loop, stmts []ast.Stmt, want flow) bool {
	return f.indexTop(l, stmts, want) >= 0
}

func (f *finder) indexTop(l *Loop, stmts []ast.Stmt, want flow) int {
	return slices.IndexFunc(stmts, func(s ast.Stmt) bool { return f.exits(l, s) == want })
}

// bounded reports whether anything but the attempt's error can end the
// loop.
func (f *finder) bounded(l *Loop) bool {
	if l.Via != nil {
		// The called function's exits return to the loop, which calls
		// it again: only the loop's condition can end it.
		fs := l.Stmt.(*ast.ForStmt)
		return fs.Cond != nil && f.other(l, fs.Cond)
	}
	if f.other(l, l.Branch) {
		return true // if err == nil || attempts == 0 { return err }
	}
	switch s := l.Stmt.(type) {
	case *ast.RangeStmt:
		return true // over an integer
	case *ast.ForStmt:
		if s.Cond != nil && f.other(l, s.Cond) {
			return true
		}
	}
	if l.Endless {
		// Only an exit on the way from one failed attempt to the next
		// can stop a reconnect loop while the dependency is down: one in
		// the failure path, or in another case of the select whose timer
		// or ticker case holds the attempt (select { case <-ctx.Done():
		// return; case <-t.C: err := call() ... }).
		if f.guardedExit(l, l.Between, false, false) {
			return true
		}
		for _, s := range l.Body.List {
			sel, ok := s.(*ast.SelectStmt)
			if !ok || !contains(sel, l.Call) {
				continue
			}
			var others []ast.Stmt
			for _, c := range sel.Body.List {
				if !contains(c, l.Call) {
					others = append(others, c)
				}
			}
			if f.guardedExit(l, []ast.Stmt{&ast.SelectStmt{Body: &ast.BlockStmt{List: others}}}, false, false) {
				return true
			}
		}
		return false
	}
	return f.guardedExit(l, l.Body.List, false, false)
}

// guardedExit reports whether stmts hold an exit from the loop (other
// than the success exit) that runs under a condition on something other
// than the attempt's results: a counter, the clock, a context. nested
// says the statements are inside a switch, select or inner loop, where a
// plain break does not leave the loop.
func (f *finder) guardedExit(l *Loop, stmts []ast.Stmt, guarded, nested bool) bool {
	for _, s := range stmts {
		switch s := s.(type) {
		case *ast.ReturnStmt:
			if guarded && ast.Stmt(s) != l.Success {
				return true
			}
		case *ast.BranchStmt:
			labelled := s.Label != nil && l.Label != nil && s.Label.Name == l.Label.Name
			if guarded && s.Tok == token.BREAK && ast.Stmt(s) != l.Success && (labelled || (!nested && s.Label == nil)) {
				return true
			}
			// continue outer: on to the next round of an enclosing loop,
			// which leaves this one.
			if guarded && s.Tok == token.CONTINUE && s.Label != nil && !labelled && ast.Stmt(s) != l.Success {
				return true
			}
		case *ast.ExprStmt:
			if call, ok := s.X.(*ast.CallExpr); ok && guarded && f.noReturn(call) {
				return true
			}
		case *ast.IfStmt:
			g := guarded || (f.other(l, s.Cond) && !f.optionalLimit(s.Cond))
			if s.Init != nil && !contains(s.Init, l.Call) {
				g = g || f.other(l, s.Init)
			}
			if f.guardedExit(l, s.Body.List, g, nested) {
				return true
			}
			if s.Else != nil && f.guardedExit(l, []ast.Stmt{s.Else}, g, nested) {
				return true
			}
		case *ast.BlockStmt:
			if f.guardedExit(l, s.List, guarded, nested) {
				return true
			}
		case *ast.LabeledStmt:
			if f.guardedExit(l, []ast.Stmt{s.Stmt}, guarded, nested) {
				return true
			}
		case *ast.SwitchStmt:
			g := guarded || (s.Tag != nil && f.other(l, s.Tag)) || (s.Init != nil && f.other(l, s.Init))
			for _, c := range s.Body.List {
				cc := c.(*ast.CaseClause)
				gc := g || slices.ContainsFunc(cc.List, func(e ast.Expr) bool { return f.other(l, e) })
				if f.guardedExit(l, cc.Body, gc, true) {
					return true
				}
			}
		case *ast.TypeSwitchStmt:
			for _, c := range s.Body.List {
				if f.guardedExit(l, c.(*ast.CaseClause).Body, guarded, true) {
					return true
				}
			}
		case *ast.SelectStmt:
			for _, c := range s.Body.List {
				cc := c.(*ast.CommClause)
				gc := guarded || (cc.Comm != nil && f.other(l, cc.Comm))
				if f.guardedExit(l, cc.Body, gc, true) {
					return true
				}
			}
		case *ast.ForStmt:
			if f.guardedExit(l, s.Body.List, true, true) {
				return true
			}
		case *ast.RangeStmt:
			if f.guardedExit(l, s.Body.List, true, true) {
				return true
			}
		}
	}
	return false
}

// optionalLimit reports whether cond is a limit that is off when zero
// (r.maxAttempts > 0 && attempt > r.maxAttempts), on a field that the
// package never gives a constant other than zero: off with the zero
// value of its struct, so that with the defaults nothing ends the loop.
func (f *finder) optionalLimit(cond ast.Expr) bool {
	ops := operands(cond, token.LAND)
	if len(ops) != 2 {
		return false
	}
	on, ok := ast.Unparen(ops[0]).(*ast.BinaryExpr)
	if !ok || (on.Op != token.GTR && on.Op != token.NEQ) {
		return false
	}
	if tv, ok := f.info.Types[on.Y]; !ok || tv.Value == nil || constant.Sign(tv.Value) != 0 {
		return false
	}
	sel, ok := ast.Unparen(on.X).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	field, ok := f.info.ObjectOf(sel.Sel).(*types.Var)
	if !ok || !field.IsField() || !match.Mentions(f.info, ops[1], field) {
		return false
	}
	if cmp, ok := ast.Unparen(ops[1]).(*ast.BinaryExpr); !ok || (cmp.Op != token.GTR && cmp.Op != token.GEQ && cmp.Op != token.LSS && cmp.Op != token.LEQ) {
		return false
	}
	set := false
	for _, file := range f.files {
		ast.Inspect(file, func(n ast.Node) bool {
			var key, val ast.Expr
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				key, val = n.Key, n.Value
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i, lhs := range n.Lhs {
						if ls, ok := lhs.(*ast.SelectorExpr); ok && f.info.ObjectOf(ls.Sel) == field {
							key, val = ls.Sel, n.Rhs[i]
						}
					}
				}
			}
			if id, ok := key.(*ast.Ident); ok && f.info.ObjectOf(id) == field {
				if tv, ok := f.info.Types[val]; ok && tv.Value != nil && constant.Sign(tv.Value) != 0 {
					set = true
				}
			}
			return !set
		})
	}
	return !set
}

// wraps reports whether e only wraps or formats an error: a call of
// the standard library's fmt or errors, or of a function named for
// wrapping (errors.Wrap, fmt.Errorf, xerrors.Errorf).
func (f *finder) wraps(e ast.Expr) bool {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := match.Callee(f.info, c)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	if match.Pure(fn) || strings.HasSuffix(fn.Pkg().Path(), "errors") {
		return true
	}
	n := strings.ToLower(fn.Name())
	return strings.Contains(n, "wrap") || strings.HasSuffix(n, "errorf")
}

func contains(n ast.Node, m ast.Node) bool {
	return m != nil && n.Pos() <= m.Pos() && m.End() <= n.End()
}

// other reports whether n depends on something besides the attempt's
// results: another variable, or a call without arguments such as
// shuttingDown().
func (f *finder) other(l *Loop, n ast.Node) bool {
	// A selector is judged by its operand alone; the attempt itself (if
	// call() == nil) is not looked into.
	skip := func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.SelectorExpr:
			return true
		case *ast.CallExpr:
			return m == l.Call
		}
		return false
	}
	return match.Any(n, skip, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.SelectorExpr:
			// Only the operand: the selected name is a field or method.
			if id, ok := m.X.(*ast.Ident); ok {
				if _, pkg := f.info.Uses[id].(*types.PkgName); pkg {
					return stopSentinel(f.info.Uses[m.Sel])
				}
			}
			for k := range ast.Preorder(m.X) {
				if f.otherIdent(l, k) {
					return true
				}
			}
		case *ast.CallExpr:
			if m == l.Call || len(m.Args) != 0 {
				return false
			}
			if sel, ok := ast.Unparen(m.Fun).(*ast.SelectorExpr); !ok || !f.ofAttempt(l, sel.X) {
				tv, ok := f.info.Types[m.Fun]
				return !ok || !tv.IsType()
			}
		case *ast.Ident:
			return f.otherIdent(l, m)
		}
		return false
	})
}

// stopSentinel reports whether o is a package-level error that says the
// caller stopped what the attempt uses (ErrClosed, net.ErrClosed,
// http.ErrServerClosed, ErrShutdown, context.Canceled): a loop that
// leaves on it ends when its owner closes it.
func stopSentinel(o types.Object) bool {
	v, ok := o.(*types.Var)
	if !ok || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() || !match.IsError(v.Type()) {
		return false
	}
	name := strings.ToLower(v.Name())
	return strings.Contains(name, "closed") || strings.Contains(name, "shutdown") || strings.Contains(name, "stopped") ||
		(v.Pkg().Path() == "context" && v.Name() == "Canceled")
}

func (f *finder) otherIdent(l *Loop, n ast.Node) bool {
	id, ok := n.(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := f.info.ObjectOf(id).(*types.Var)
	if !ok || v.IsField() {
		return false
	}
	if v.Pkg() != nil && v.Parent() == v.Pkg().Scope() && match.IsError(v.Type()) {
		// A sentinel error, as in errors.Is(err, ErrX), is about the
		// attempt; one that says its owner closed it is a stop.
		return stopSentinel(v)
	}
	if (v == l.Err || slices.Contains(l.Results, types.Object(v))) && f.earlier(l, v, id) {
		// entry, err := q.Peek(); if errors.Is(err, ErrEmpty) { ... };
		// r, err := entry.Reader(): before the attempt, err holds
		// another call's error.
		return true
	}
	return v != l.Err && !slices.Contains(l.Results, types.Object(v))
}

// earlier reports whether id, a use of v inside l's body, reads what
// another call of the round assigned v: before the attempt, a call
// earlier in the round; after it, a call on the failure path that
// decides what the failure means (err = onError(res, err); if err !=
// nil { return err }), but not a wrapping of the attempt's error
// (fmt.Errorf, errors.Join, a Wrap).
func (f *finder) earlier(l *Loop, v *types.Var, id *ast.Ident) bool {
	if l.Call == nil || l.Body == nil || id.Pos() < l.Body.Pos() || id.Pos() > l.Body.End() {
		return false
	}
	from := l.Body.Pos()
	if id.Pos() > l.Call.End() {
		from = l.Call.End()
	}
	// Nothing from id on is looked at, nor below a function literal.
	skip := func(n ast.Node) bool {
		_, lit := n.(*ast.FuncLit)
		return lit || n.Pos() >= id.Pos()
	}
	return match.Any(l.Body, skip, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Pos() >= id.Pos() || contains(as, l.Call) || as.Pos() < from {
			return false
		}
		if len(as.Rhs) == 1 && f.wraps(as.Rhs[0]) {
			return false
		}
		for _, e := range as.Lhs {
			if lid, ok := e.(*ast.Ident); ok && f.info.ObjectOf(lid) == v {
				return true
			}
		}
		return false
	})
}

// ofAttempt reports whether e is built only from the attempt's results.
func (f *finder) ofAttempt(l *Loop, e ast.Expr) bool {
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		if f.otherIdent(l, n) {
			ok = false
		}
		return ok
	})
	return ok
}
