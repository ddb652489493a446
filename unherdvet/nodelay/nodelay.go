package nodelay

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

// reportImmediate reports l, or a failure path of it, when it tries a
// remote call again with no wait.
func reportImmediate(p *check.Pass, l *loops.Loop) {
	info := p.TypesInfo
	bodies := p.Bodies()
	if !match.RemoteDeep(info, bodies, l.Call, 3) || match.Local(info, bodies, l.Call, 2) {
		return
	}
	if onlyOnEOF(info, l) || loops.Ticked(info, l) || replacesConn(info, l) {
		return
	}
	if len(l.Waits) == 0 && !mayWait(info, l, l.Between) {
		p.Report(l.At, "retry loop tries again at once, with no wait between attempts: when the service fails, every client sends it the load again as fast as it answers; wait a capped, growing, jittered delay between attempts, as retry.Do does by default")
		return
	}
	if s := bareBranch(info, l); s != nil && l.Shape == loops.For {
		p.Report(s, "this failure path of the retry loop tries again at once, without the wait the other path has: when the service fails, every client sends it the load again as fast as it answers; wait a capped, growing, jittered delay on every path, as retry.Do does by default")
	}
}

// replacesConn reports whether l, a bounded for loop, goes round only
// to replace a connection that turned out dead: its failure path drops
// it (c.conn = nil), and the next round makes a new one under a test for
// it (if c.conn == nil { c.conn, err = c.connect(); if err != nil {
// return err } }) that leaves when the connect fails. A service that is
// down is then not called again, as with database/sql's
// driver.ErrBadConn rule.
func replacesConn(info *types.Info, l *loops.Loop) bool {
	if l.Shape != loops.For || !l.Bounded || l.Call == nil {
		return false
	}
	dropped := make(map[string]bool)
	for _, s := range l.Between {
		if s.Pos() < l.Call.Pos() {
			continue
		}
		ast.Inspect(s, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 && match.IsNil(info, as.Rhs[0]) {
				dropped[types.ExprString(as.Lhs[0])] = true
			}
			return true
		})
	}
	if len(dropped) == 0 {
		return false
	}
	for _, s := range l.Between {
		ifs, ok := s.(*ast.IfStmt)
		if !ok || s.End() > l.Call.Pos() || ifs.Init != nil || ifs.Else != nil {
			continue
		}
		b, ok := ast.Unparen(ifs.Cond).(*ast.BinaryExpr)
		if !ok || b.Op != token.EQL || !match.IsNil(info, b.Y) || !dropped[types.ExprString(b.X)] {
			continue
		}
		// The new connection, and a failure of it that leaves.
		made, leaves := false, false
		for _, t := range ifs.Body.List {
			switch t := t.(type) {
			case *ast.AssignStmt:
				if types.ExprString(t.Lhs[0]) == types.ExprString(b.X) {
					made = true
				}
			case *ast.IfStmt:
				if made && len(t.Body.List) > 0 {
					_, leaves = t.Body.List[len(t.Body.List)-1].(*ast.ReturnStmt)
				}
			}
		}
		if made && leaves {
			return true
		}
	}
	return false
}

// mayWait reports whether something between attempts might wait, or
// calls another service.
func mayWait(info *types.Info, l *loops.Loop, stmts []ast.Stmt) bool {
	// Below a function literal is code that runs at another time; a
	// select is judged as a whole.
	skip := func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit, *ast.SelectStmt:
			return true
		}
		return false
	}
	waiting := func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectStmt:
			// One with a default case only looks (is it stopped?).
			for _, c := range n.Body.List {
				if c.(*ast.CommClause).Comm == nil {
					return slices.ContainsFunc(n.Body.List, func(c ast.Stmt) bool {
						return mayWait(info, l, c.(*ast.CommClause).Body)
					})
				}
			}
			return true
		case *ast.UnaryExpr:
			return n.Op == token.ARROW
		case *ast.CallExpr:
			return n != l.Call && waits(info, n)
		}
		return false
	}
	for _, s := range stmts {
		if l.Shape == loops.Recursion && ast.Node(s) == l.At {
			continue // the call that repeats the attempt
		}
		if match.Any(s, skip, waiting) {
			return true
		}
	}
	return false
}

// bareBranch returns the branch of an if/else on the failure path of a
// for loop of which one side waits and the other goes round without
// waiting (if
// onErr != nil { onErr(err) } else { log(err); time.Sleep(d) }), or nil.
func bareBranch(info *types.Info, l *loops.Loop) ast.Stmt {
	waitsIn := func(stmts []ast.Stmt) bool {
		for _, s := range stmts {
			for n := range ast.Preorder(s) {
				for _, w := range l.Waits {
					if n == ast.Node(w.Call) {
						return true
					}
				}
			}
		}
		return false
	}
	leaves := func(stmts []ast.Stmt) bool {
		skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
		return slices.ContainsFunc(stmts, func(s ast.Stmt) bool {
			return match.Any(s, skip, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ReturnStmt:
					return true
				case *ast.BranchStmt:
					return n.Tok == token.BREAK || n.Tok == token.GOTO
				}
				return false
			})
		})
	}
	bare := func(stmts []ast.Stmt) bool {
		return !waitsIn(stmts) && !leaves(stmts) && !mayWait(info, l, stmts)
	}
	for _, s := range l.Between {
		ifs, ok := s.(*ast.IfStmt)
		if !ok {
			continue
		}
		eb, ok := ifs.Else.(*ast.BlockStmt)
		if !ok {
			continue
		}
		switch {
		case waitsIn(ifs.Body.List) && bare(eb.List):
			return eb
		case waitsIn(eb.List) && bare(ifs.Body.List):
			return ifs.Body
		}
	}
	return nil
}

// waits reports whether call might wait: it is named for waiting, is
// given a duration, or goes to another service (other than building an
// HTTP request).
func waits(info *types.Info, call *ast.CallExpr) bool {
	fn := match.Callee(info, call)
	if match.Func(fn, "net/http", "NewRequest", "NewRequestWithContext") {
		return false
	}
	name := ""
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	name = strings.ToLower(name)
	for _, w := range []string{"wait", "sleep", "backoff", "pause", "delay", "throttle", "retry"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	for _, a := range call.Args {
		if match.Named(info.TypeOf(a), "time", "Duration") {
			return true
		}
	}
	return match.Remote(info, call) || match.Dials(fn)
}

// onlyOnEOF reports whether every continue on the loop's failure path
// runs under a condition about an end of stream (errors.Is(err, io.EOF),
// strings.HasSuffix(err.Error(), "EOF")): the connection is already
// closed, so going round sends nothing to the service; it is a busy loop
// over a dead stream, not a retry of a request. A condition that the
// error timed out (t, ok := err.(timeout); ok && t.Timeout()) counts too
// when the attempt takes no context: the try has then already waited
// its own timeout, which paces the loop (with a context, the deadline
// may have passed, and every try fails at once).
func onlyOnEOF(info *types.Info, l *loops.Loop) bool {
	if l.Shape != loops.For || l.Call == nil {
		return false
	}
	found, all := false, true
	var visit func(n ast.Node, eof bool)
	visit = func(n ast.Node, eof bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				return false
			case *ast.IfStmt:
				inner := eof || mentionsEOF(info, m.Cond) || (!takesContext(info, l.Call) && asksTimeout(info, m.Cond))
				if m.Init != nil {
					visit(m.Init, eof)
				}
				visit(m.Body, inner)
				if m.Else != nil {
					visit(m.Else, eof)
				}
				return false
			case *ast.BranchStmt:
				if m.Tok == token.CONTINUE && (m.Label == nil || (l.Label != nil && m.Label.Name == l.Label.Name)) {
					found = true
					all = all && eof
				}
			}
			return true
		})
	}
	for _, s := range l.Between {
		if s.Pos() > l.Call.End() {
			visit(s, false)
		}
	}
	return found && all
}

// mentionsEOF reports whether e names io.EOF or io.ErrUnexpectedEOF, or
// holds a string literal with "EOF" in it.
func mentionsEOF(info *types.Info, e ast.Expr) bool {
	for n := range ast.Preorder(e) {
		switch n := n.(type) {
		case *ast.Ident:
			if o := info.Uses[n]; o != nil && o.Pkg() != nil && o.Pkg().Path() == "io" && (o.Name() == "EOF" || o.Name() == "ErrUnexpectedEOF") {
				return true
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && strings.Contains(n.Value, "EOF") {
				return true
			}
		}
	}
	return false
}

// asksTimeout reports whether e calls a method Timeout() bool, as a
// net.Error has.
func asksTimeout(info *types.Info, e ast.Expr) bool {
	for n := range ast.Preorder(e) {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 0 {
			if fn := match.Callee(info, call); fn != nil && fn.Name() == "Timeout" {
				sig := fn.Signature()
				if sig.Recv() != nil && sig.Results().Len() == 1 && types.Identical(sig.Results().At(0).Type(), types.Typ[types.Bool]) {
					return true
				}
			}
		}
	}
	return false
}

// takesContext reports whether call is given a context, or a request
// that may carry one.
func takesContext(info *types.Info, call *ast.CallExpr) bool {
	return slices.ContainsFunc(call.Args, func(a ast.Expr) bool {
		t := info.TypeOf(a)
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		return match.IsContext(t) || match.Named(t, "net/http", "Request")
	})
}
