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
// call (a new unique key on each conflict). A client pointed at a copy of
// itself (cp := *c; c = &cp) is the same target, and in a loop with no
// counter a random pick from the same list (addrs[r.Intn(len(addrs))])
// comes back to each entry: neither is a new input.
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
		if f.copiesItself(as, scope) {
			return true // c = &cp, with cp := *c: the same target
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
	for _, v := range f.markedDown(l, call, scope) {
		changed[v] = true
	}
	// A value taken, before the call, from one that changes (cur :=
	// servers[index], with index moved on after the call) changes too.
	// refers reports whether e names a changed variable, or indexes with
	// an identifier that indexes accepts.
	refers := func(e ast.Node, indexes func(types.Object) bool) bool {
		for n := range ast.Preorder(e) {
			switch n := n.(type) {
			case *ast.IndexExpr:
				for m := range ast.Preorder(n.Index) {
					if id, ok := m.(*ast.Ident); ok && indexes(f.info.ObjectOf(id)) {
						return true
					}
				}
			case *ast.Ident:
				if changed[f.info.ObjectOf(n)] {
					return true
				}
			}
		}
		return false
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

// copiesItself reports whether as points a variable at a copy of what
// it pointed to (cp := *c; c = &cp, in scope): a client copied before one
// of its fields is set, whose target stays the same. A field set to
// anything but a variable, a field or a literal (cp.addr = addrs[i],
// cp.addr = pick()) may move it to another target, and does not count.
func (f *finder) copiesItself(as *ast.AssignStmt, scope ast.Node) bool {
	if len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return false
	}
	id, ok := ast.Unparen(as.Lhs[0]).(*ast.Ident)
	if !ok {
		return false
	}
	u, ok := ast.Unparen(as.Rhs[0]).(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return false
	}
	cp, ok := ast.Unparen(u.X).(*ast.Ident)
	if !ok {
		return false
	}
	self, copied := f.info.ObjectOf(id), f.info.ObjectOf(cp)
	// A field of the copy set to the next of several (cp.addr =
	// addrs[i], cp.addr = pick()) makes it another target.
	moved := false
	ast.Inspect(scope, func(n ast.Node) bool {
		d, ok := n.(*ast.AssignStmt)
		if !ok || moved || len(d.Lhs) != len(d.Rhs) {
			return !moved
		}
		for i, lhs := range d.Lhs {
			sel, ok := ast.Unparen(lhs).(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if x, ok := ast.Unparen(sel.X).(*ast.Ident); ok && (f.info.ObjectOf(x) == self || f.info.ObjectOf(x) == copied) {
				switch ast.Unparen(d.Rhs[i]).(type) {
				case *ast.Ident, *ast.BasicLit, *ast.SelectorExpr:
				default:
					moved = true
				}
			}
		}
		return !moved
	})
	if moved {
		return false
	}
	for n := range ast.Preorder(scope) {
		d, ok := n.(*ast.AssignStmt)
		if !ok || len(d.Lhs) != 1 || len(d.Rhs) != 1 {
			continue
		}
		l, ok := ast.Unparen(d.Lhs[0]).(*ast.Ident)
		star, ok2 := ast.Unparen(d.Rhs[0]).(*ast.StarExpr)
		if ok && ok2 && f.info.ObjectOf(l) == copied {
			if x, ok := ast.Unparen(star.X).(*ast.Ident); ok && f.info.ObjectOf(x) == self {
				return true
			}
		}
	}
	return false
}

// drawsFresh reports whether an assignment receives from a channel or
// reads from a stream (the next item a consumer handles), or its values
// call time.Now, a random
// source, or a function that picks the next of several
// (r.nextLookupdEndpoint(), p.selectMessageQueue(msg, last): failover to
// another address).
//
// rotation says whether picking the next of several counts.
func (f *finder) drawsFresh(as *ast.AssignStmt, rotation bool) bool {
	for _, r := range as.Rhs {
		if u, ok := ast.Unparen(r).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
			return true // msg, ok := <-incoming: the next item
		}
		if !rotation && f.randomPick(r) {
			// A loop that goes round for ever picking at random from
			// the same list comes back to each entry: a reconnect.
			continue
		}
		for n := range ast.Preorder(r) {
			if c, ok := n.(*ast.CallExpr); ok {
				if fn := match.Callee(f.info, c); match.IsRand(fn) || match.Func(fn, "time", "Now") || (rotation && rotates(fn)) || takes(fn) {
					return true
				}
			}
		}
	}
	return false
}

// randomPick reports whether e makes a random source (rand.New(...),
// rand.NewSource(...)) or draws an index into a list from one
// (r.Intn(len(addrs)), rand.IntN(len(addrs))).
func (f *finder) randomPick(e ast.Expr) bool {
	c, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := match.Callee(f.info, c)
	if !match.IsRand(fn) {
		return false
	}
	if strings.HasPrefix(fn.Name(), "New") {
		return true
	}
	if len(c.Args) != 1 {
		return false
	}
	l, ok := ast.Unparen(c.Args[0]).(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(l.Fun).(*ast.Ident)
	return ok && id.Name == "len"
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

// takes reports whether fn is a method named for taking what comes next
// from a stream (Read..., Recv..., Receive..., Pop...): line, err :=
// in.ReadString('\n') gives each round a new item to send.
func takes(fn *types.Func) bool {
	if !match.IsMethod(fn) {
		return false
	}
	for _, p := range []string{"Read", "Recv", "Receive", "Pop"} {
		if strings.HasPrefix(fn.Name(), p) {
			return true
		}
	}
	return false
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
	for n := range ast.Preorder(cond) {
		if b, ok := n.(*ast.BinaryExpr); ok {
			switch b.Op {
			case token.LSS, token.LEQ, token.GTR, token.GEQ:
				if t, ok := f.info.TypeOf(b.X).Underlying().(*types.Basic); ok && t.Info()&types.IsNumeric != 0 {
					return true
				}
			}
		}
	}
	return false
}

// cannotFail reports whether call is no attempt, because trying it again
// cannot change its result unless something else does: parsing or
// formatting (match.Pure), or a function of the package that only checks
// local state and builds an error (func (n *node) validate() error { if
// !n.healthy() { return newError(codeBusy) }; return nil }): it returns
// an error under an if, and nothing it calls, two levels down, can fail
// on its own.
func (f *finder) cannotFail(call *ast.CallExpr) bool {
	fn := match.Callee(f.info, call)
	if match.Pure(fn) {
		return true
	}
	body := f.bodies[fn]
	return body != nil && f.checks(body) && !f.fails(body, 2)
}

// checks reports whether body returns an error under an if, at its top
// level (if !n.healthy() { return newError(codeBusy) }): it judges state
// rather than doing nothing (a stub's return nil).
func (f *finder) checks(body *ast.BlockStmt) bool {
	for _, s := range body.List {
		ifs, ok := s.(*ast.IfStmt)
		if !ok || len(ifs.Body.List) == 0 {
			continue
		}
		r, ok := ifs.Body.List[len(ifs.Body.List)-1].(*ast.ReturnStmt)
		if ok && len(r.Results) > 0 && !match.IsNil(f.info, r.Results[len(r.Results)-1]) {
			return true
		}
	}
	return false
}

// fails reports whether body makes a call that returns an error and is
// neither pure nor, followed depth levels into the package, a function
// that cannot fail; or receives from a channel or selects.
func (f *finder) fails(body *ast.BlockStmt, depth int) bool {
	for n := range ast.Preorder(body) {
		switch n := n.(type) {
		case *ast.SelectStmt:
			return true
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				return true
			}
		case *ast.CallExpr:
			if !match.ReturnsError(f.info, n) {
				continue
			}
			fn := match.Callee(f.info, n)
			if match.Pure(fn) {
				continue
			}
			if inner := f.bodies[fn]; inner == nil || depth == 0 || f.fails(inner, depth-1) {
				return true
			}
		}
	}
	return false
}

// markedDown returns the variables that a failover loop picks before
// the call, hands to a call after a failure (marking it down), and tests
// before the call to leave when none is left: host := pick(); if host ==
// "" { return err }; err = request(host); ...; markDown(host). The next
// round picks another, so the attempt's input changes.
func (f *finder) markedDown(l *Loop, call *ast.CallExpr, scope ast.Node) []types.Object {
	var picked []types.Object
	ast.Inspect(scope, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Pos() > call.Pos() || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return !ok
		}
		id, ok := as.Lhs[0].(*ast.Ident)
		if _, isCall := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); ok && isCall {
			if v := f.info.ObjectOf(id); v != nil {
				picked = append(picked, v)
			}
		}
		return true
	})
	var out []types.Object
	for _, v := range picked {
		tested, marked := false, false
		ast.Inspect(scope, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.IfStmt:
				if n.End() < call.Pos() && match.Mentions(f.info, n.Cond, v) && f.last(l, n.Body.List) == leave {
					tested = true
				}
			case *ast.CallExpr:
				if n.Pos() > call.End() {
					for _, a := range n.Args {
						if id, ok := ast.Unparen(a).(*ast.Ident); ok && f.info.ObjectOf(id) == v {
							marked = true
						}
					}
				}
			}
			return true
		})
		if tested && marked {
			out = append(out, v)
		}
	}
	return out
}
