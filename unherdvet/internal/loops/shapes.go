package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// gotoLoop matches a retry by goto: a label before the attempt, and a
// failure branch that jumps back to it.
//
//	again:
//		resp, err := call()
//		if err != nil {
//			time.Sleep(d)
//			goto again
//		}
//
// list is the block holding the label, at index i.
func (f *finder) gotoLoop(fn *Func, list []ast.Stmt, i int, s ast.Stmt) *Loop {
	ls, ok := s.(*ast.LabeledStmt)
	if !ok {
		return nil
	}
	switch st := ls.Stmt.(type) {
	case *ast.SelectStmt:
		// A label on a stop check (select { case <-stop: return;
		// default: }), which a goto from after it jumps back to, stands
		// before the attempt as well as on the statement itself; on a
		// select that blocks it is a label for break.
		if !stopCheck(st) {
			return nil
		}
	case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt:
		return nil // a label for break and continue
	}
	stmts := append([]ast.Stmt{ls.Stmt}, list[i+1:]...)
	repeats := func(s ast.Stmt) bool {
		b, ok := s.(*ast.BranchStmt)
		return ok && b.Tok == token.GOTO && b.Label != nil && b.Label.Name == ls.Label.Name
	}
	l := f.backward(fn, stmts, ls.Pos(), repeats)
	if l == nil {
		// The attempt under an if that only guards it (if lock == nil {
		// lock, err = c.LockKey(key); if err != nil { ...; goto again } }).
		if open := f.inline(stmts); open != nil {
			l = f.backward(fn, open, ls.Pos(), repeats)
		}
	}
	if l == nil {
		return nil
	}
	l.Shape, l.Label = Goto, ls.Label
	l.Bounded = f.bounded(l) || f.guardedRepeat(l)
	return l
}

// stopCheck reports whether sel only checks for a stop without
// blocking: a default case, and other cases that receive and return.
func stopCheck(sel *ast.SelectStmt) bool {
	def := false
	for _, c := range sel.Body.List {
		cc := c.(*ast.CommClause)
		if cc.Comm == nil {
			def = true
			if len(cc.Body) > 0 {
				return false
			}
			continue
		}
		if len(cc.Body) == 0 {
			return false
		}
		if _, ret := cc.Body[len(cc.Body)-1].(*ast.ReturnStmt); !ret {
			return false
		}
	}
	return def
}

// recursion matches a retry by recursion: a function whose failure
// branch returns a call of the function itself.
//
//	func (c *Client) send(req *Request) (*Response, error) {
//		resp, err := c.do(req)
//		if err != nil {
//			time.Sleep(d)
//			return c.send(req)
//		}
//		return resp, nil
//	}
func (f *finder) recursion(fn *Func) *Loop {
	self, _ := f.info.Defs[fn.Node.(*ast.FuncDecl).Name].(*types.Func)
	if self == nil {
		return nil
	}
	var again *ast.CallExpr
	repeats := func(s ast.Stmt) bool {
		r, ok := s.(*ast.ReturnStmt)
		if !ok {
			return false
		}
		for _, e := range r.Results {
			if c, ok := ast.Unparen(e).(*ast.CallExpr); ok && f.calls(c, self) {
				again = c
				return true
			}
		}
		return false
	}
	stmts := fn.Body.List
	if len(stmts) == 0 {
		return nil
	}
	l := f.backward(fn, stmts, stmts[0].Pos(), repeats)
	if open := f.unwrap(stmts); l == nil && open != nil {
		// if rendered { resp, err = c.viaBrowser(req) } else { resp, err
		// = c.viaClient(req) }: the attempt in a conditional that only
		// picks it, as for a for loop.
		l = f.backward(fn, open, stmts[0].Pos(), repeats)
	}
	if l == nil {
		l, again = f.statusRecursion(fn, self)
	}
	if l == nil {
		l = f.guardedRecursion(fn, stmts, repeats)
	}
	if l == nil || f.calls(l.Call, self) {
		return nil
	}
	if !f.sameArgs(fn, again) {
		return nil // a fallback: the function called on something else
	}
	l.Shape = Recursion
	// Bounded when the branch tests something else (a counter), the
	// call passes a changed argument (attempt+1, retries-1), or an exit
	// guarded by something else comes first.
	l.Bounded = f.other(l, l.Branch) || f.guardedRepeat(l)
	for i, a := range again.Args {
		if _, ok := ast.Unparen(a).(*ast.BinaryExpr); ok && !f.onlyPaces(l, fn.Sig.Params().At(i)) {
			l.Bounded = true
		}
	}
	if !l.Bounded {
		var before []ast.Stmt
		for _, s := range l.Between {
			if !repeats(s) {
				before = append(before, s)
			}
		}
		l.Bounded = f.guardedExit(l, before, false, false) || f.repairs(l)
	}
	return l
}

// guardedRecursion matches a recursion whose attempt sits in the body of
// a top-level if, with no else, that only guards it (if t.allowed() {
// err := t.post(body); if err != nil { return t.send(body, n-1) } }):
// when the guard is false nothing is tried. The guard must not test an
// error. It returns nil when there is none.
func (f *finder) guardedRecursion(fn *Func, stmts []ast.Stmt, repeats func(ast.Stmt) bool) *Loop {
	for _, s := range stmts {
		ifs, ok := s.(*ast.IfStmt)
		if !ok || ifs.Init != nil || f.testsError(ifs.Cond) {
			continue
		}
		if eb, ok := ifs.Else.(*ast.BlockStmt); ifs.Else != nil && (!ok || jumps(eb)) {
			continue
		}
		if l := f.backward(fn, ifs.Body.List, stmts[0].Pos(), repeats); l != nil {
			return l
		}
	}
	return nil
}

// onlyPaces reports whether param, changed by arithmetic in the call
// that repeats l (backoff+1), is used, outside the calls of the function
// itself, only to make the wait: inside a wait's delay, or in the value
// of a variable a delay reads (d := jitteredWait(backoff)). Such an
// argument counts the attempts for the schedule, not for a limit.
func (f *finder) onlyPaces(l *Loop, param *types.Var) bool {
	if len(l.Waits) == 0 {
		return false
	}
	var delays []ast.Expr
	feeds := make(map[types.Object]bool)
	for _, w := range l.Waits {
		if w.Scope != nil || w.Delay == nil {
			return false
		}
		delays = append(delays, w.Delay)
		ast.Inspect(w.Delay, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && f.info.Uses[id] != nil {
				feeds[f.info.Uses[id]] = true
			}
			return true
		})
	}
	self := f.info.Defs[l.Func.Node.(*ast.FuncDecl).Name]
	within := func(path []ast.Node, id *ast.Ident) bool {
		for i := len(path) - 1; i >= 0; i-- {
			if e, ok := path[i].(ast.Expr); ok && slices.Contains(delays, e) {
				return true
			}
			switch p := path[i].(type) {
			case *ast.CallExpr:
				if c := match.Callee(f.info, p); c != nil && (types.Object(c) == self || types.Object(c.Origin()) == self) {
					return true
				}
			case *ast.AssignStmt:
				if p.Tok != token.DEFINE && p.Tok != token.ASSIGN || len(p.Lhs) != len(p.Rhs) {
					return false
				}
				for k, r := range p.Rhs {
					if r.Pos() <= id.Pos() && id.End() <= r.End() {
						lid, ok := p.Lhs[k].(*ast.Ident)
						return ok && feeds[f.info.ObjectOf(lid)]
					}
				}
				return false
			case ast.Stmt:
				return false
			}
		}
		return false
	}
	ok, used := true, false
	var path []ast.Node
	ast.Inspect(l.Func.Body, func(n ast.Node) bool {
		if n == nil {
			path = path[:len(path)-1]
			return false
		}
		if id, isID := n.(*ast.Ident); isID && f.info.Uses[id] == param {
			used = true
			ok = ok && within(path, id)
		}
		path = append(path, n)
		return ok
	})
	return ok && used
}

// repairs reports whether the statement that repeats l's attempt comes,
// in its block, after a call that creates what the attempt found missing
// (create..., declare..., ensure...), under an if that tests the kind of
// error rather than any failure (if isNoGroup(err) { q.createGroup(ctx);
// return q.read(ctx) }): the state changes once, and the next attempt
// does not meet that error again.
func (f *finder) repairs(l *Loop) bool {
	path := pathTo(l.Body, l.At)
	if len(path) < 2 {
		return false
	}
	blk, ok := path[len(path)-1].(*ast.BlockStmt)
	ifs, ok2 := path[len(path)-2].(*ast.IfStmt)
	if !ok || !ok2 || ifs.Body != blk || ifs.Cond == l.Branch || f.errCond(ifs.Cond, l.Err, l.Call) != 0 || !f.mentionsErr(l, ifs.Cond) {
		return false
	}
	for _, s := range blk.List {
		if s == l.At {
			break
		}
		if es, ok := s.(*ast.ExprStmt); ok {
			if call, ok := ast.Unparen(es.X).(*ast.CallExpr); ok && creates(match.Callee(f.info, call)) {
				return true
			}
		}
	}
	return false
}

// mentionsErr reports whether e mentions the attempt's error.
func (f *finder) mentionsErr(l *Loop, e ast.Expr) bool {
	return l.Err != nil && match.Mentions(f.info, e, l.Err)
}

// creates reports whether fn is named for creating something
// (createStreamGroup, declareQueue, ensureTopic).
func creates(fn *types.Func) bool {
	if fn == nil {
		return false
	}
	n := strings.ToLower(fn.Name())
	return strings.HasPrefix(n, "create") || strings.HasPrefix(n, "declare") || strings.HasPrefix(n, "ensure")
}

// retryClosures matches retries by recursion through a closure of the
// function: a literal held in a variable that waits and then returns a
// call of the function itself, which the function returns on failure.
//
//	func (c *client) refresh(n int) error {
//		retry := func(err error) error {
//			if n > 0 {
//				time.Sleep(c.backoff)
//				return c.refresh(n - 1)
//			}
//			return err
//		}
//		...
//		if err != nil {
//			return retry(err)
//		}
//	}
//
// It matches retries by mutual recursion alike: on a failure path (under
// an if that tests an error) the function returns a call of another
// function of the package, which waits and returns a call of the first
// again (return c.retry(req, n, d) ... func (c *client) retry(req, n, d)
// { time.Sleep(d); return c.send(req, n-1, d*2) }).
//
// The loop spans the block that waits and calls again; it is bounded
// when that block runs under a condition, or when the call passes a
// changed argument (n-1).
func (f *finder) retryClosures(fn *Func) []*Loop {
	self, _ := f.info.Defs[fn.Node.(*ast.FuncDecl).Name].(*types.Func)
	if self == nil {
		return nil
	}
	var out []*Loop
	for _, s := range fn.Body.List {
		as, ok := s.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			continue
		}
		lit, ok := ast.Unparen(as.Rhs[0]).(*ast.FuncLit)
		id, isID := as.Lhs[0].(*ast.Ident)
		if !ok || !isID || !f.returnsCallOf(fn.Body, f.info.ObjectOf(id)) {
			continue
		}
		sig, _ := f.info.TypeOf(lit).(*types.Signature)
		out = append(out, f.callsBack(&Func{Node: lit, Body: lit.Body, Sig: sig, Outer: fn}, self)...)
	}
	for _, h := range f.retryHelpers(fn, self) {
		out = append(out, f.callsBack(h, self)...)
	}
	return out
}

// callsBack returns the retries by recursion that cl, a closure or
// helper of self, makes: each block of its body that waits and then
// returns a call of self.
func (f *finder) callsBack(cl *Func, self *types.Func) []*Loop {
	var out []*Loop
	ast.Inspect(cl.Body, func(n ast.Node) bool {
		blk, ok := n.(*ast.BlockStmt)
		if !ok {
			_, lit := n.(*ast.FuncLit)
			return !lit
		}
		for r, st := range blk.List {
			ret, ok := st.(*ast.ReturnStmt)
			if !ok || len(ret.Results) == 0 {
				continue
			}
			call, ok := ast.Unparen(ret.Results[0]).(*ast.CallExpr)
			if !ok || !f.calls(call, self) {
				continue
			}
			l := &Loop{Stmt: blk, Body: blk, Func: cl, Call: call, Branch: call, At: ret,
				Shape: Recursion, Between: blk.List[:r]}
			if l.Waits = f.waits(l); len(l.Waits) == 0 {
				continue
			}
			l.Bounded = blk != cl.Body || f.guardedExit(l, l.Between, false, false)
			for _, a := range call.Args {
				if _, ok := ast.Unparen(a).(*ast.BinaryExpr); ok {
					l.Bounded = true // retries-1
				}
			}
			out = append(out, l)
		}
		return true
	})
	return out
}

// retryHelpers returns the functions of the package, other than self,
// whose call fn returns on a failure path: under an if, outside
// function literals, whose condition tests an error (err != nil,
// errors.Is(err, ErrX), as one operand of && or ||).
func (f *finder) retryHelpers(fn *Func, self *types.Func) []*Func {
	var out []*Func
	seen := make(map[*types.Func]bool)
	var failing []bool // per enclosing if: whether it tests an error
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.FuncLit:
				return false
			case *ast.IfStmt:
				if m.Init != nil {
					visit(m.Init)
				}
				failing = append(failing, f.testsError(m.Cond))
				visit(m.Body)
				failing = failing[:len(failing)-1]
				if m.Else != nil {
					visit(m.Else)
				}
				return false
			case *ast.ReturnStmt:
				if !slices.Contains(failing, true) || len(m.Results) == 0 {
					return true
				}
				call, ok := ast.Unparen(m.Results[0]).(*ast.CallExpr)
				if !ok {
					return true
				}
				h := match.Callee(f.info, call)
				if h == nil {
					return true
				}
				h = h.Origin()
				decl := f.decls[h]
				if h == self || seen[h] || decl == nil {
					return true
				}
				seen[h] = true
				sig, _ := h.Type().(*types.Signature)
				out = append(out, &Func{Node: decl, Body: decl.Body, Sig: sig, Name: decl.Name.Name})
			}
			return true
		})
	}
	visit(fn.Body)
	return out
}

// testsError reports whether cond tests an error for a failure (err !=
// nil, errors.Is(err, ErrX)), alone or as an operand of && or ||.
func (f *finder) testsError(cond ast.Expr) bool {
	return slices.ContainsFunc(append(operands(cond, token.LAND), operands(cond, token.LOR)...), func(c ast.Expr) bool {
		return f.failing(c) != nil
	})
}

// returnsCallOf reports whether body returns a call of the function held
// in v (return retry(err)), outside function literals.
func (f *finder) returnsCallOf(body *ast.BlockStmt, v types.Object) bool {
	return v != nil && match.AnyReturn(body, func(e ast.Expr) bool {
		c, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return false
		}
		id, ok := ast.Unparen(c.Fun).(*ast.Ident)
		return ok && f.info.ObjectOf(id) == v
	})
}

// statusRecursion matches a function that calls itself again on some
// statuses of its attempt's answer: resp, err := c.Do(req); if err !=
// nil { return err }; switch resp.StatusCode { case 502, 503: if n <
// max { out, err = self(..., n+1) } }. It returns the loop and the
// repeating call, or nil.
func (f *finder) statusRecursion(fn *Func, self *types.Func) (*Loop, *ast.CallExpr) {
	stmts := fn.Body.List
	for k, s := range stmts {
		call, errv, results := f.errCall(s)
		if call == nil || len(results) == 0 || f.cannotFail(call) || f.calls(call, self) {
			continue
		}
		for m := k + 1; m < len(stmts); m++ {
			var cond ast.Expr
			var bodies [][]ast.Stmt
			switch st := stmts[m].(type) {
			case *ast.SwitchStmt:
				if st.Tag == nil || !f.statusOf(st.Tag, results) {
					continue
				}
				cond = st.Tag
				for _, c := range st.Body.List {
					bodies = append(bodies, c.(*ast.CaseClause).Body)
				}
			case *ast.IfStmt:
				if !f.statusTest(st.Cond, results) {
					continue
				}
				cond, bodies = st.Cond, [][]ast.Stmt{st.Body.List}
			default:
				continue
			}
			for _, body := range bodies {
				var again *ast.CallExpr
				at := nestedRepeat([]ast.Stmt{&ast.BlockStmt{List: body}}, func(st ast.Stmt) bool {
					var rhs []ast.Expr
					switch st := st.(type) {
					case *ast.AssignStmt:
						rhs = st.Rhs
					case *ast.ReturnStmt:
						rhs = st.Results
					}
					for _, e := range rhs {
						if c, ok := ast.Unparen(e).(*ast.CallExpr); ok && f.calls(c, self) {
							again = c
							return true
						}
					}
					return false
				})
				if at == nil {
					continue
				}
				blk := &ast.BlockStmt{Lbrace: stmts[0].Pos(), List: stmts[:m+1], Rbrace: stmts[m].End() - 1}
				l := &Loop{Stmt: blk, Body: blk, Func: fn, Call: call, Err: errv, Results: results, Branch: cond, At: at}
				l.Between = append(append(l.Between, body...), stmts[:k]...)
				l.Waits = f.waits(l)
				return l, again
			}
		}
	}
	return nil, nil
}

// statusOf reports whether e is a status of one of the attempt's results
// (resp.StatusCode).
func (f *finder) statusOf(e ast.Expr, results []types.Object) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok || !strings.Contains(strings.ToLower(sel.Sel.Name), "status") {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	return ok && slices.Contains(results, f.info.ObjectOf(id))
}

// guardedRepeat reports whether the statement that repeats the attempt
// runs only under a condition on something else (if status == connecting
// { goto again }), which can stop the repeats.
func (f *finder) guardedRepeat(l *Loop) bool {
	for _, p := range pathTo(l.Body, l.At) {
		if ifs, ok := p.(*ast.IfStmt); ok && ifs.Cond != l.Branch && f.other(l, ifs.Cond) {
			return true
		}
	}
	return false
}

// pathTo returns the nodes from root down to target's parent, or nil
// when root does not hold target.
func pathTo(root, target ast.Node) []ast.Node {
	var path, found []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			path = path[:len(path)-1]
			return false
		}
		if n == target {
			found = slices.Clone(path)
		}
		path = append(path, n)
		return found == nil
	})
	return found
}

// nestedRepeat returns the statement in stmts, below their top level
// and outside function literals, that repeats the attempt; or nil.
func nestedRepeat(stmts []ast.Stmt, repeats func(ast.Stmt) bool) ast.Stmt {
	var found ast.Stmt
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok || found != nil {
				return false
			}
			if st, ok := n.(ast.Stmt); ok && st != s && repeats(st) {
				found = st
			}
			return found == nil
		})
	}
	return found
}

// sameArgs reports whether the recursive call passes the function's own
// parameters, in order, each as it is or changed by arithmetic (attempt+1).
func (f *finder) sameArgs(fn *Func, call *ast.CallExpr) bool {
	params := fn.Sig.Params()
	if len(call.Args) != params.Len() {
		return false
	}
	for i, a := range call.Args {
		switch a := ast.Unparen(a).(type) {
		case *ast.Ident:
			if f.info.ObjectOf(a) != params.At(i) {
				return false
			}
		case *ast.BinaryExpr, *ast.CallExpr:
			// attempt+1; a lock taken again for the new call
		default:
			return false
		}
	}
	return true
}

// calls reports whether call invokes fn (generic instances included).
func (f *finder) calls(call *ast.CallExpr, fn *types.Func) bool {
	c := match.Callee(f.info, call)
	if c == nil {
		return false
	}
	return c == fn || c.Origin() == fn
}

// backward finds, in stmts, an attempt followed by a branch whose failure
// path ends with a statement that repeats it (repeats reports which),
// and returns the loop it makes, spanning start to that branch, with
// Bounded left to the caller; or nil.
func (f *finder) backward(fn *Func, stmts []ast.Stmt, start token.Pos, repeats func(ast.Stmt) bool) *Loop {
	for k, s := range stmts {
		call, errv, results := f.errCall(s)
		if call == nil || f.cannotFail(call) {
			continue
		}
		// The branch: the if holding the attempt, or the next if that
		// tests its error, before any statement that returns.
		j, op := -1, token.Token(0)
		for m := k; m < len(stmts) && m < k+4; m++ {
			if ifs, ok := stmts[m].(*ast.IfStmt); ok {
				if op = f.errCond(ifs.Cond, errv, call); op != 0 {
					j = m
					break
				}
				// if errors.Is(err, ErrBusy) { wait; goto again }: a test
				// of the kind of error whose body repeats the attempt.
				if body := ifs.Body.List; errv != nil && f.failing(ifs.Cond) == errv && len(body) > 0 && repeats(body[len(body)-1]) {
					op, j = token.NEQ, m
					break
				}
			}
			if _, ok := stmts[m].(*ast.ReturnStmt); ok {
				break
			}
		}
		if j < 0 || (j > k+1 && f.reassigned(stmts[k+1:j], errv)) {
			// No branch, or the one found tests the error of a later call
			// (cn.c, err = dial(); ...; err = cn.ssl(mode); if err != nil).
			continue
		}
		ifs := stmts[j].(*ast.IfStmt)
		var failure []ast.Stmt
		end := ast.Node(ifs)
		switch {
		case op == token.NEQ:
			failure = ifs.Body.List
		case ifs.Else != nil:
			eb, ok := ifs.Else.(*ast.BlockStmt)
			if !ok {
				continue
			}
			failure = eb.List
		default:
			// if err == nil { return } <failure>; goto again
			for m := j + 1; m < len(stmts); m++ {
				if repeats(stmts[m]) {
					failure, end = stmts[j+1:m+1], stmts[m]
					break
				}
			}
		}
		if len(failure) == 0 {
			continue
		}
		at := failure[len(failure)-1]
		if !repeats(at) {
			// A repeat under a condition: if err != nil { if retry {
			// time.Sleep(d); goto again }; return err }.
			if at = nestedRepeat(failure, repeats); at == nil {
				continue
			}
		}
		body := stmts[:j+1]
		if end != ast.Node(ifs) {
			body = append(append([]ast.Stmt(nil), stmts[:j+1]...), failure...)
		}
		blk := &ast.BlockStmt{Lbrace: start, List: body, Rbrace: end.End() - 1}
		l := &Loop{Stmt: blk, Body: blk, Func: fn, Call: call, Err: errv, Results: results, Branch: ifs.Cond, At: at}
		l.Between = append(append(l.Between, failure...), stmts[:k]...)
		if f.varies(l, call, l.Body) || f.unwraps(call, errv) {
			return nil
		}
		l.Between = append(l.Between, f.leadIns(stmts[k+1:], l.Between, at, repeats)...)
		l.Waits = f.waits(l)
		return l
	}
	return nil
}

// leadIns returns the statements that lead to each statement in stmts,
// other than at, that repeats the attempt too, under an if that tests an
// error: a second goto back from inside the loops over the answer's
// parts (if err := part.Err(); err != nil { ...; goto again }), or
// another return of the recursive call. For each, they are the statements before it in every
// block around it, up to the innermost loop around it or stmts' own
// level, and the select whose case holds it (a timer case). They run
// between a failed attempt and the next, as the branch's failure path
// does; those already in between (or inside one of them) are left out.
func (f *finder) leadIns(stmts, between []ast.Stmt, at ast.Stmt, repeats func(ast.Stmt) bool) []ast.Stmt {
	var out []ast.Stmt
	add := func(s ast.Stmt) {
		for _, b := range append(between, out...) {
			if contains(b, s) {
				return
			}
		}
		out = append(out, s)
	}
	before := func(list []ast.Stmt, child ast.Node) {
		for _, s := range list {
			if s == child {
				return
			}
			add(s)
		}
	}
	var path []ast.Node
	for _, top := range stmts {
		ast.Inspect(top, func(n ast.Node) bool {
			if n == nil {
				path = path[:len(path)-1]
				return false
			}
			if _, lit := n.(*ast.FuncLit); lit {
				return false
			}
			onFailure := slices.ContainsFunc(path, func(p ast.Node) bool {
				ifs, ok := p.(*ast.IfStmt)
				return ok && f.testsError(ifs.Cond)
			})
			if st, ok := n.(ast.Stmt); ok && st != at && st != top && onFailure && repeats(st) {
				child := n
				// A select whose timer case makes the attempt that fails
				// (select { case <-time.After(ttl / 2): if err :=
				// refresh(); err != nil { goto again } }) waits before
				// that attempt, on success and failure alike: a period,
				// not a wait between attempts. Only a select on a failure
				// path (if err != nil { select { case <-time.After(d):
				// goto again } }) is one.
				failed := func(i int) bool {
					return slices.ContainsFunc(path[:i], func(p ast.Node) bool {
						ifs, ok := p.(*ast.IfStmt)
						return ok && f.testsError(ifs.Cond)
					})
				}
			walk:
				for i := len(path) - 1; i >= 0; i-- {
					switch p := path[i].(type) {
					case *ast.BlockStmt:
						before(p.List, child)
					case *ast.CaseClause:
						before(p.Body, child)
					case *ast.CommClause:
						before(p.Body, child)
					case *ast.SelectStmt:
						if failed(i) {
							add(commsOnly(p)) // its timer; the case holding the repeat is walked above
						}
					case *ast.ForStmt, *ast.RangeStmt:
						break walk
					}
					child = path[i]
				}
			}
			path = append(path, n)
			return true
		})
	}
	return out
}
