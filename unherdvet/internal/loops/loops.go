// Package loops finds hand-written retry loops, the subject of most
// checks.
//
// A retry loop is a for statement whose body makes a call that returns an
// error, or the package's own error interface that embeds error (the
// attempt), branches on that error, exits the loop when it is
// nil (return or break) and goes round again when it is not (continue,
// or the end of the body). The branch is an if on the error (err == nil,
// or a disjunction with it such as err == nil || n == 0; err != nil, or a
// conjunction with it such as err != nil && retryable(err)), an if on a
// boolean computed from the error (retry := shouldRetry(err, n)), or the
// loop's own condition (for errors.Is(err, ErrBusy) && r < n).
//
// The failure test may also ask for an answer (res == nil || err !=
// nil), and a retry decision may be tested in the if that makes the
// attempt (if retry, err := f(); !retry { return err }). An attempt of
// the package that answers nil when its remote call fails (func fetch()
// *Config) is tested by that answer (cfg != nil is the success,
// nilanswer.go), and an error joined from a later step (err =
// errors.Join(err, step())) makes that step the attempt's last call.
//
// The branch may give up on some errors and go round on others (a
// continue below its top level, or one that falls, when it does not go
// round, into the exit it shares with a success), judge the answer as well as the error
// (err == nil && resp.StatusCode < 500), or go round on a status of the
// answer alone (if resp.StatusCode == 429 { continue }). An endless for
// loop that waits and goes round on failure and carries on after a
// success is a reconnect or long-poll loop (Endless); so is an endless
// loop that only calls a function of the package that makes the attempt
// and returns on its failure (for { pull() }), and one that drains a
// channel another service feeds (a watch, a subscription) and, after it
// closes, waits and asks for a new one (resubscribe.go). The attempt may sit
// in a conditional that only guards it (if err == nil { resp, err =
// c.Do(req) }, if/else or switch arms that each make it), as vet's own
// notimeout fix writes it, in a for loop or a recursion alike, and an if
// that only guards the attempt and its branch (if len(addrs) > 0 { _, err
// := join(addrs); if err == nil { return nil } }; time.Sleep(d)) is read
// as its body: when the guard is false the loop waits and goes round, as
// after a failure. A success may need an answer as well as no error (err
// == nil && leader != "", or if err != nil { ... } else if leader == "" {
// ... } else { break }), and a loop may go round on one named error only
// (if errors.Is(err, errReconnect) { continue }; return err, or a switch
// on the error). Outside for statements, a goto back to a label before
// the attempt, or on a stop check before it (L: select { case <-stop:
// return; default: }) (Goto), and a function that calls itself again on
// failure or on a status (Recursion)
// are retry loops too, as is one whose failure path hands over to a
// closure or another function of the package that waits and calls it
// again (mutual recursion). Every goto back or recursive return under an
// error test, not only the branch's own, brings the waits on its way,
// from inside loops over the answer's parts too. A select that waits on a timer may hold the
// attempt in its timer case; its timer is then the wait before the
// attempt, and its other cases (<-ctx.Done()) can end the loop. A retry queue (Requeue, requeue.go) keeps
// the items whose attempt failed for the next round, in a list or on the
// channel the loop receives from.
//
// Loops that look alike but are not retry loops do not match:
//
//   - a polling loop returns when the call fails and waits only after a
//     success that is not final yet;
//   - pagination and other iteration return on error, and go round on
//     success;
//   - a failover loop ranges over a list of addresses or candidates, each
//     tried once (a range over anything but an integer or a list of
//     delays, or an attempt indexed by the loop variable);
//   - a loop driven by an iterator (for rows.Next(), for sc.Scan()) goes
//     round for each item;
//   - a server's accept loop takes the next connection from its
//     listener (Accept), backing off only on temporary errors;
//   - a search changes the attempt's input each time round (a growing
//     list, a new timestamped key, the next endpoint), and a walk over an
//     error's chain unwraps the error it tests;
//   - parsing and formatting (strconv, encoding/json) is never an
//     attempt, nor is a function of the package that only checks local
//     state and builds an error: trying again cannot change its result;
//   - a failover picks a target each round, marks it down after a
//     failure and leaves when none is left.
//
// The waits between attempts are time.Sleep, time.After, time.NewTimer,
// Timer.Reset, and calls of the package's own functions that wait for one
// of their time.Duration parameters or for a delay of their own making.
package loops

import (
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// A Loop is one retry loop.
type Loop struct {
	// Stmt is the *ast.ForStmt or *ast.RangeStmt.
	Stmt ast.Stmt
	// Body is the loop's body.
	Body *ast.BlockStmt
	// Func is the innermost function holding the loop.
	Func *Func
	// Call is the attempt: the call whose error decides.
	Call *ast.CallExpr
	// Err is the variable holding the attempt's error, nil when the call
	// is compared with nil directly.
	Err types.Object
	// Results are the attempt's other results that the loop keeps.
	Results []types.Object
	// Between are the statements that run between a failed attempt and
	// the next: those of the failure branch and those before the attempt.
	Between []ast.Stmt
	// Success is the statement that leaves the loop after a success.
	Success ast.Stmt
	// Branch is the condition that tells success from failure: an if's
	// condition, or the loop's own.
	Branch ast.Expr
	// Label is the loop's label, if any.
	Label *ast.Ident
	// Waits are the waits between attempts.
	Waits []*Wait
	// Bounded says that something other than the attempt's error can end
	// the loop: a condition on a counter or the time, a range over an
	// integer, a context's Done channel.
	Bounded bool
	// Endless says that the loop goes on after a success too: a reconnect
	// or long-poll loop (for { conn, err := dial(); if err != nil {
	// time.Sleep(d); continue }; serve(conn) }). Success is then nil.
	Endless bool
	// Shape says how the loop repeats the attempt.
	Shape Shape
	// At is where a finding about the whole loop is reported: the for
	// statement, or the goto or recursive return that repeats the attempt.
	At ast.Node
	// Via is the call of the package's function that makes the attempt
	// and returns on its failure, when the loop only calls it (for {
	// pull() }); nil when the attempt is in the loop itself.
	Via *ast.CallExpr
	// Drain is the range over the channel the attempt returned, for a
	// loop whose failure is that channel's closing and which asks for a
	// new one (a watch or subscription made again); nil otherwise.
	Drain *ast.RangeStmt
}

// Shape is how a retry loop repeats its attempt.
type Shape int

// Ways to repeat an attempt.
const (
	For       Shape = iota // a for statement; Stmt is the *ast.ForStmt or *ast.RangeStmt
	Goto                   // a goto back to a label before the attempt; Stmt spans the label to the branch
	Recursion              // the function calls itself again on failure, or through a closure or helper that waits; Stmt spans its body up to the branch, or the helper's block that waits and calls back
	Requeue                // the items whose attempt failed are kept and tried again next round; Stmt is the round
)

// A Func is a function declaration or literal.
type Func struct {
	Node ast.Node // *ast.FuncDecl or *ast.FuncLit
	Body *ast.BlockStmt
	Sig  *types.Signature
	// Name is the declared name, "" for a literal.
	Name string
	// Outer is the function a literal appears in, nil for a declaration.
	Outer *Func
}

// Outermost returns the function declaration fn appears in: fn itself,
// or the declaration holding the literal.
func (fn *Func) Outermost() *Func {
	for fn.Outer != nil {
		fn = fn.Outer
	}
	return fn
}

// WaitKind says how a loop waits.
type WaitKind int

// Ways to wait.
const (
	Sleep    WaitKind = iota // time.Sleep(d)
	After                    // <-time.After(d)
	Timer                    // time.NewTimer(d), t.Reset(d)
	AfterCtx                 // time.After(d) or a timer in a select that also receives from ctx.Done()
	Helper                   // sleep(ctx, d): a function of the package that waits for its argument
)

// A Wait is one wait between attempts.
type Wait struct {
	Call  *ast.CallExpr
	Delay ast.Expr
	Kind  WaitKind
	// Scope is the body of the function the loop calls that waits a
	// delay of its own making (c.backoff.sleepWithBackoff(...)), where
	// Delay is; nil when Delay is the loop's.
	Scope *ast.BlockStmt
}

// Result lists a package's retry loops, in source order.
type Result struct {
	Loops []*Loop
}

// Analyzer finds the retry loops of a package, outside test files and
// generated code. It reports nothing.
var Analyzer = &analysis.Analyzer{
	Name:       "retryloop",
	Doc:        "find hand-written retry loops",
	Run:        run,
	ResultType: reflect.TypeFor[*Result](),
}

func run(pass *analysis.Pass) (any, error) {
	f := &finder{
		info:       pass.TypesInfo,
		labels:     make(map[ast.Stmt]*ast.Ident),
		forBodies:  make(map[*ast.BlockStmt]bool),
		nilAnswers: make(map[types.Object]bool),
		bodies:     match.Bodies(pass.TypesInfo, pass.Files),
		files:      pass.Files,
		res:        new(Result),
	}
	f.helpers, f.sleepers = waitFuncs(pass.TypesInfo, pass.Files)
	f.closures = closureWaits(pass.TypesInfo, pass.Files)
	f.decls = make(map[*types.Func]*ast.FuncDecl)
	for _, file := range pass.Files {
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					f.decls[fn] = fd
				}
			}
		}
	}
	for _, file := range pass.Files {
		if match.Skip(pass, file) {
			continue
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			sig, _ := pass.TypesInfo.ObjectOf(fd.Name).Type().(*types.Signature)
			fn := &Func{Node: fd, Body: fd.Body, Sig: sig, Name: fd.Name.Name}
			f.walk(fn)
			if l := f.recursion(fn); l != nil {
				f.res.Loops = append(f.res.Loops, l)
			}
			f.res.Loops = append(f.res.Loops, f.retryClosures(fn)...)
		}
	}
	return f.res, nil
}

type finder struct {
	info   *types.Info
	labels map[ast.Stmt]*ast.Ident
	// helpers are the package's wait helpers, with the index of the
	// parameter they wait for.
	helpers map[*types.Func]int
	// sleepers are the package's functions that wait a delay of their
	// own making, with that wait.
	sleepers map[*types.Func]*Wait
	// closures are the function literals held in variables that wait,
	// by variable (onError := func(err error) error { ...
	// time.After(d) ... }).
	closures map[types.Object]closureWait
	// bodies are the package's functions, to follow a call into.
	bodies map[*types.Func]*ast.BlockStmt
	// decls are the package's function declarations, by function.
	decls map[*types.Func]*ast.FuncDecl
	// nilAnswers are the variables and fields that hold the answer of an
	// attempt that reports failure by a nil answer (nilOnFailure).
	nilAnswers map[types.Object]bool
	// forBodies are the bodies of the for statements matched as retry
	// loops.
	forBodies map[*ast.BlockStmt]bool
	// files are the package's files.
	files []*ast.File
	res   *Result
}

// walk finds the retry loops of fn, and of the function literals in it.
func (f *finder) walk(fn *Func) {
	defer func() {
		f.res.Loops = append(f.res.Loops, f.requeues(fn)...)
		f.res.Loops = append(f.res.Loops, f.channelRounds(fn)...)
		f.res.Loops = append(f.res.Loops, f.passes(fn)...)
	}()
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			sig, _ := f.info.TypeOf(n).(*types.Signature)
			f.walk(&Func{Node: n, Body: n.Body, Sig: sig, Outer: fn})
			return false
		case *ast.LabeledStmt:
			f.labels[n.Stmt] = n.Label
		case *ast.BlockStmt:
			for i, s := range n.List {
				if i == 0 && f.forBodies[n] {
					// A label at the top of a retry loop's body: a goto to
					// it goes round that loop (see toTop).
					continue
				}
				if l := f.gotoLoop(fn, n.List, i, s); l != nil {
					f.res.Loops = append(f.res.Loops, l)
				}
			}
		case *ast.ForStmt, *ast.RangeStmt:
			if l := f.match(fn, n.(ast.Stmt)); l != nil {
				if fs, ok := n.(*ast.ForStmt); ok {
					f.forBodies[fs.Body] = true
				}
				f.res.Loops = append(f.res.Loops, l)
			}
		}
		return true
	})
}

// match returns the retry loop s is, or nil.
func (f *finder) match(fn *Func, s ast.Stmt) *Loop {
	l := &Loop{Stmt: s, Func: fn, Label: f.labels[s], At: s}
	switch s := s.(type) {
	case *ast.RangeStmt:
		// Only a range over an integer repeats the same thing; a range
		// over a list tries each element once.
		t := f.info.TypeOf(s.X)
		if t == nil {
			return nil
		}
		// A range over a list of delays is a schedule: for _, d := range
		// []time.Duration{1s, 2s, 5s}.
		if !schedule(t) {
			if b, ok := t.Underlying().(*types.Basic); !ok || b.Info()&types.IsInteger == 0 {
				return nil
			}
		}
		l.Body = s.Body
	case *ast.ForStmt:
		if s.Cond != nil && f.iterates(s.Cond) {
			return nil
		}
		l.Body = s.Body
	}
	if !f.attempt(l) && !f.condAttempt(l) && !f.restart(l) && !f.delegated(l) && !f.resubscribe(l) {
		return nil
	}
	if accepts(match.Callee(f.info, l.Call)) {
		return nil
	}
	l.Bounded = f.bounded(l)
	l.Waits = f.waits(l)
	if l.Endless && len(l.Waits) == 0 && !match.RemoteDeep(f.info, f.bodies, l.Call, 3) {
		// An endless loop that goes round on failure without waiting is
		// more often a consumer skipping a bad item than a retry, unless
		// what fails is a call to another service.
		return nil
	}
	return l
}

// delegated matches an endless loop that only calls one of the package's
// functions, which makes the attempt and returns when it fails, so that
// the loop calls it again: for { pull() }, with func pull() { resp, err
// := c.Pull(ctx); if err != nil { log(err); time.Sleep(d); return }; ...
// }. The statements of that failure branch run between attempts; only
// the loop's own statements can end it.
func (f *finder) delegated(l *Loop) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Init != nil || fs.Post != nil || len(l.Body.List) != 1 {
		return false
	}
	es, ok := l.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	via, ok := ast.Unparen(es.X).(*ast.CallExpr)
	if !ok {
		return false
	}
	body := f.bodies[match.Callee(f.info, via)]
	if body == nil {
		return false
	}
	stmts := body.List
	for i, s := range stmts {
		call, errv, results := f.errCall(s)
		if call == nil || f.cannotFail(call) {
			continue
		}
		ifs, ok := s.(*ast.IfStmt)
		if !ok && i+1 < len(stmts) {
			ifs, ok = stmts[i+1].(*ast.IfStmt)
		}
		if !ok || f.errCond(ifs.Cond, errv, call) != token.NEQ || ifs.Else != nil || len(ifs.Body.List) == 0 {
			return false
		}
		failure := ifs.Body.List
		if _, ret := failure[len(failure)-1].(*ast.ReturnStmt); !ret || f.varies(l, call, body) {
			return false
		}
		l.Call, l.Err, l.Results, l.Branch, l.Endless, l.Via = call, errv, results, ifs.Cond, true, via
		l.Between = append(append([]ast.Stmt(nil), failure[:len(failure)-1]...), stmts[:i]...)
		return true
	}
	return false
}

// accepts reports whether fn takes the next connection or stream from a
// listener (net.Listener.Accept, AcceptTCP, a session's AcceptStream): a
// server's accept loop, which backs off on temporary errors and ends when
// the listener closes, serves rather than retries.
func accepts(fn *types.Func) bool {
	return match.IsMethod(fn) && strings.HasPrefix(fn.Name(), "Accept")
}

// restart matches a supervisor's reconnect loop that does not branch on
// the attempt's error at all: for { connected, err := c.once(ctx); if
// connected { b.Reset() }; log(err); wait(b.Duration()) }. The attempt
// returns when the connection drops or fails, and the loop always waits
// and goes round; what marks it as a reconnect rather than a periodic
// job is the backoff it resets (a Reset method that is not a timer's).
func (f *finder) restart(l *Loop) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Init != nil || fs.Cond != nil || fs.Post != nil || (!f.resetsBackoff(l.Body) && !f.growsWait(l.Body)) {
		return false
	}
	for i, s := range l.Body.List {
		if _, ok := s.(*ast.AssignStmt); !ok {
			continue
		}
		call, errv, results := f.errCall(s)
		if call == nil || f.cannotFail(call) {
			continue
		}
		rest := l.Body.List[i+1:]
		if f.anyTop(l, rest, leave) || f.leavesOnFailure(l, rest, errv, call) {
			return false
		}
		l.Call, l.Err, l.Results, l.Branch, l.Endless = call, errv, results, call, true
		l.Between = append(append([]ast.Stmt(nil), rest...), l.Body.List[:i]...)
		return !f.varies(l, call, l.Body)
	}
	return false
}

// leavesOnFailure reports whether one of stmts is an if that tests the
// attempt's error for a failure and leaves the loop at the end of its
// body (if err != nil { report(err); return }): a poll or a walk that
// gives up when the call fails, not a supervisor that calls it again.
func (f *finder) leavesOnFailure(l *Loop, stmts []ast.Stmt, errv types.Object, call *ast.CallExpr) bool {
	for _, s := range stmts {
		if ifs, ok := s.(*ast.IfStmt); ok && f.errCond(ifs.Cond, errv, call) == token.NEQ && f.last(l, ifs.Body.List) == leave {
			return true
		}
	}
	return false
}

// growsWait reports whether body, outside function literals, waits for a
// delay held in a variable that it also grows (d *= 2, d <<= 1, d = d *
// 2, d = min(d*2, max)): a supervisor's own backoff, which it sets back
// when a run lasted (if time.Since(last) > reset { d = initial }).
func (f *finder) growsWait(body *ast.BlockStmt) bool {
	grown := make(map[types.Object]bool)
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if _, lit := n.(*ast.FuncLit); lit {
			return false
		}
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return true
		}
		id, ok := as.Lhs[0].(*ast.Ident)
		if !ok {
			return true
		}
		v := f.info.ObjectOf(id)
		switch as.Tok {
		case token.MUL_ASSIGN, token.SHL_ASSIGN:
			grown[v] = true
		case token.ASSIGN:
			ast.Inspect(as.Rhs[0], func(m ast.Node) bool {
				if b, ok := m.(*ast.BinaryExpr); ok && (b.Op == token.MUL || b.Op == token.SHL) && match.Mentions(f.info, b, v) {
					grown[v] = true
				}
				return !grown[v]
			})
		}
		return true
	})
	if len(grown) == 0 {
		return false
	}
	skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
	return match.Any(body, skip, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		w := f.wait(call, false)
		if w == nil {
			return false
		}
		for v := range grown {
			if match.Mentions(f.info, w.Delay, v) {
				return true
			}
		}
		return false
	})
}

// resetsBackoff reports whether body calls a Reset method, outside
// function literals, that is not time.Timer's or time.Ticker's.
func (f *finder) resetsBackoff(body *ast.BlockStmt) bool {
	skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
	return match.Any(body, skip, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		fn := match.Callee(f.info, call)
		return fn != nil && fn.Name() == "Reset" && len(call.Args) == 0 && (fn.Pkg() == nil || fn.Pkg().Path() != "time")
	})
}

// schedule reports whether t is a slice or array of time.Duration.
func schedule(t types.Type) bool {
	var elem types.Type
	switch u := t.Underlying().(type) {
	case *types.Slice:
		elem = u.Elem()
	case *types.Array:
		elem = u.Elem()
	case *types.Pointer:
		if a, ok := u.Elem().Underlying().(*types.Array); ok {
			elem = a.Elem()
		}
	}
	return elem != nil && match.Named(elem, "time", "Duration")
}

// iterates reports whether a loop condition calls a method that is not
// about time or a context and does not count: rows.Next(), sc.Scan(),
// it.Valid(), but not i < policy.MaxRetries().
func (f *finder) iterates(cond ast.Expr) bool {
	skip := func(n ast.Node) bool {
		u, ok := n.(*ast.UnaryExpr)
		return ok && u.Op == token.NOT // for !c.closed(): a state, not the next item
	}
	return match.Any(cond, skip, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return false
		}
		fn := match.Callee(f.info, call)
		if fn == nil {
			return false
		}
		if n := fn.Name(); strings.HasPrefix(n, "is") || strings.HasPrefix(n, "Is") {
			return false // for c.IsRunning(): a state query
		}
		if sig := fn.Type().(*types.Signature); sig.Recv() != nil {
			// A count from a method (i < policy.MaxRetries()) is a limit,
			// not an iterator.
			if b, ok := f.info.TypeOf(call).Underlying().(*types.Basic); ok && b.Info()&types.IsNumeric != 0 {
				return false
			}
			p := fn.Pkg()
			return p == nil || (p.Path() != "time" && p.Path() != "context")
		}
		return false
	})
}

// attempt finds the loop's attempt and its branches, filling in l, and
// reports whether the loop is a retry loop.
func (f *finder) attempt(l *Loop) bool {
	stmts := l.Body.List
	if f.attemptIn(l, stmts) {
		return true
	}
	// The attempt guarded, the wait in a select on a timer that the
	// flattening below would drop.
	if open := f.unwrap(stmts); open != nil && f.attemptIn(l, open) {
		return true
	}
	if flat := f.flatten(stmts); flat != nil {
		if f.attemptIn(l, flat) {
			return true
		}
		stmts = flat
	}
	if open := f.unwrap(stmts); open != nil && f.attemptIn(l, open) {
		return true
	}
	if open := f.inline(l.Body.List); open != nil && f.attemptIn(l, open) {
		return true
	}
	if open := f.switchIfs(l.Body.List); open != nil {
		return f.attemptIn(l, open)
	}
	return false
}

// sentinel reports whether cond tests errv for one error of the program
// (errors.Is(err, errReconnect), err == errReconnect), not nil.
func (f *finder) sentinel(cond ast.Expr, errv types.Object) bool {
	if errv == nil {
		return false
	}
	is := func(x ast.Expr) bool {
		id, ok := ast.Unparen(x).(*ast.Ident)
		return ok && f.info.ObjectOf(id) == errv
	}
	named := func(x ast.Expr) bool {
		if match.IsNil(f.info, x) {
			return false
		}
		var id *ast.Ident
		switch x := ast.Unparen(x).(type) {
		case *ast.Ident:
			id = x
		case *ast.SelectorExpr:
			id = x.Sel
		}
		v, ok := f.info.ObjectOf(id).(*types.Var)
		return ok && v.Parent() == v.Pkg().Scope() && match.IsError(v.Type())
	}
	switch c := ast.Unparen(cond).(type) {
	case *ast.CallExpr:
		fn := match.Callee(f.info, c)
		return match.Func(fn, "errors", "Is") && len(c.Args) == 2 && is(c.Args[0]) && named(c.Args[1])
	case *ast.BinaryExpr:
		return c.Op == token.EQL && ((is(c.X) && named(c.Y)) || (is(c.Y) && named(c.X)))
	}
	return false
}

// lookedUp reports whether the receiver of call is a variable that one
// of before, the statements ahead of it in the round, declares from a
// call (g := ctl.getOrCreate(name); err := g.Register(p); if err ==
// errGroupStale { continue }): going round on that error looks the
// object up again after it went stale, a new input rather than the same
// call again.
func (f *finder) lookedUp(before []ast.Stmt, call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(sel.X).(*ast.Ident)
	if !ok {
		return false
	}
	recv := f.info.ObjectOf(id)
	for _, s := range before {
		as, ok := s.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE || len(as.Rhs) != 1 {
			continue
		}
		if _, isCall := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); !isCall {
			continue
		}
		for _, lhs := range as.Lhs {
			if lid, ok := lhs.(*ast.Ident); ok && f.info.Defs[lid] == recv && recv != nil {
				return true
			}
		}
	}
	return false
}

// switchIfs returns stmts with a switch on an error (switch err { case
// errReconnect: continue; default: return err }) written as the if/else
// chain it stands for, so that a case that goes round on one error is a
// branch; or nil when there is no such switch, or one of its cases
// breaks (out of the switch, not the loop).
func (f *finder) switchIfs(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		sw, ok := s.(*ast.SwitchStmt)
		if !ok || sw.Init != nil || sw.Tag == nil || !match.IsError(f.info.TypeOf(sw.Tag)) {
			continue
		}
		var def *ast.CaseClause
		var cases []*ast.CaseClause
		for _, c := range sw.Body.List {
			cc := c.(*ast.CaseClause)
			if breaks(cc.Body) {
				return nil
			}
			if cc.List == nil {
				def = cc
			} else {
				cases = append(cases, cc)
			}
		}
		var chain *ast.IfStmt
		for k := len(cases) - 1; k >= 0; k-- {
			cc := cases[k]
			var cond ast.Expr
			for _, e := range cc.List {
				if match.IsNil(f.info, e) {
					return nil // case nil: the success, in a case of its own
				}
				var t ast.Expr = &ast.BinaryExpr{X: sw.Tag, OpPos: e.Pos(), Op: token.EQL, Y: e}
				if cond != nil {
					t = &ast.BinaryExpr{X: cond, OpPos: e.Pos(), Op: token.LOR, Y: t}
				}
				cond = t
			}
			ifs := &ast.IfStmt{If: cc.Case, Cond: cond, Body: &ast.BlockStmt{Lbrace: cc.Colon, List: cc.Body, Rbrace: cc.End()}}
			if chain != nil {
				ifs.Else = chain
			}
			chain = ifs
		}
		if chain == nil {
			return nil
		}
		// The default's statements follow the chain, as its rest.
		out := append([]ast.Stmt(nil), stmts[:i]...)
		out = append(out, chain)
		if def != nil {
			out = append(out, def.Body...)
		}
		return append(out, stmts[i+1:]...)
	}
	return nil
}

// mentionsError reports whether e names a value of type error.
func (f *finder) mentionsError(e ast.Expr) bool {
	for n := range ast.Preorder(e) {
		if id, ok := n.(*ast.Ident); ok {
			if o := f.info.ObjectOf(id); o != nil {
				if _, v := o.(*types.Var); v && types.Identical(o.Type(), types.Universe.Lookup("error").Type()) {
					return true
				}
			}
		}
	}
	return false
}

// inline returns stmts with an if that only guards the attempt and its
// branch replaced by its body: if len(addrs) > 0 { _, err :=
// join(addrs); if err == nil { return nil } }; time.Sleep(d). When the
// guard is false the loop waits and goes round, as after a failure. The
// guard has no init and no else, and its condition tests no error (an
// error test is the branch of another attempt). It returns nil when
// there is no such if.
func (f *finder) inline(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		ifs, ok := s.(*ast.IfStmt)
		if !ok || ifs.Init != nil || ifs.Else != nil || f.mentionsError(ifs.Cond) {
			continue
		}
		body := ifs.Body.List
		if open := f.unwrap(body); open != nil {
			body = open // if c == nil { if x { c, err = dialA() } else { c, err = dialB() }; ... }
		}
		if !slices.ContainsFunc(body, func(s ast.Stmt) bool {
			call, _, _ := f.errCall(s)
			return call != nil
		}) {
			continue
		}
		out := append([]ast.Stmt(nil), stmts[:i]...)
		out = append(out, body...)
		return append(out, stmts[i+1:]...)
	}
	return nil
}

// unwrap returns stmts with each conditional that only guards the attempt
// replaced by the statements of its first branch that makes it: if err ==
// nil { resp, err = c.Do(req) }, if/else or switch arms that each assign
// the result of a call, none leaving the loop or going round. The attempt
// is then seen at the top level, whatever condition guards it (vet's own
// notimeout fix writes such an if). It returns nil when there is no such
// conditional.
func (f *finder) unwrap(stmts []ast.Stmt) []ast.Stmt {
	var out []ast.Stmt
	changed := false
	for _, s := range stmts {
		if arm := f.guardedAttempt(s); arm != nil {
			out = append(out, arm...)
			changed = true
			continue
		}
		out = append(out, s)
	}
	if !changed {
		return nil
	}
	return out
}

// guardedAttempt returns the statements of the first arm of the if or
// switch s that assigns an attempt's error (resp, err = call(), not a
// declaration), when no arm holds a branch, return or goto; or nil.
func (f *finder) guardedAttempt(s ast.Stmt) []ast.Stmt {
	var arms [][]ast.Stmt
	switch s := s.(type) {
	case *ast.IfStmt:
		for s != nil {
			arms = append(arms, s.Body.List)
			switch e := s.Else.(type) {
			case *ast.IfStmt:
				s = e
				continue
			case *ast.BlockStmt:
				arms = append(arms, e.List)
			}
			s = nil
		}
	case *ast.SwitchStmt:
		for _, c := range s.Body.List {
			arms = append(arms, c.(*ast.CaseClause).Body)
		}
	default:
		return nil
	}
	var found []ast.Stmt
	for _, arm := range arms {
		for _, a := range arm {
			if jumps(a) {
				return nil
			}
			if found != nil {
				continue
			}
			if as, ok := a.(*ast.AssignStmt); ok && as.Tok == token.ASSIGN {
				if call, _, _ := f.errCall(a); call != nil {
					found = arm
				}
			}
		}
	}
	return found
}

// jumps reports whether s holds a return, goto, break, continue or panic
// outside function literals.
func jumps(s ast.Stmt) bool {
	skip := func(n ast.Node) bool { _, lit := n.(*ast.FuncLit); return lit }
	return match.Any(s, skip, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ReturnStmt, *ast.BranchStmt:
			return true
		case *ast.CallExpr:
			id, ok := ast.Unparen(n.Fun).(*ast.Ident)
			return ok && id.Name == "panic"
		}
		return false
	})
}

// flatten returns stmts with a select that waits on a timer replaced by
// the body of its timer case, where the attempt often sits (timer :=
// time.NewTimer(wait); select { case <-ctx.Done(): return; case
// <-timer.C: err = call(); ... }); or nil when there is no such select,
// or its timer case breaks out of the select.
func (f *finder) flatten(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		sel, ok := s.(*ast.SelectStmt)
		if !ok {
			continue
		}
		for _, c := range sel.Body.List {
			cc := c.(*ast.CommClause)
			if cc.Comm == nil || !f.timerRecv(cc.Comm) || breaks(cc.Body) {
				continue
			}
			out := append([]ast.Stmt(nil), stmts[:i]...)
			// The select itself, its cases emptied, stays before the
			// body: its timer (case <-time.After(d)) is the wait before
			// each attempt, and its other cases (<-ctx.Done()) can stop
			// the loop.
			out = append(out, commsOnly(sel))
			out = append(out, cc.Body...)
			return append(out, stmts[i+1:]...)
		}
	}
	return nil
}

// commsOnly returns a copy of sel with its cases emptied: what it waits
// for and what can stop it, without what each case then does.
func commsOnly(sel *ast.SelectStmt) *ast.SelectStmt {
	var empty []ast.Stmt
	for _, c := range sel.Body.List {
		cc := c.(*ast.CommClause)
		empty = append(empty, &ast.CommClause{Case: cc.Case, Comm: cc.Comm, Colon: cc.Colon})
	}
	return &ast.SelectStmt{Select: sel.Select, Body: &ast.BlockStmt{Lbrace: sel.Body.Lbrace, List: empty, Rbrace: sel.Body.Rbrace}}
}

// breaks reports whether stmts hold an unlabelled break that is not
// inside an inner for, switch or select.
func breaks(stmts []ast.Stmt) bool {
	skip := func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			return true
		}
		return false
	}
	return slices.ContainsFunc(stmts, func(s ast.Stmt) bool {
		return match.Any(s, skip, func(n ast.Node) bool {
			b, ok := n.(*ast.BranchStmt)
			return ok && b.Tok == token.BREAK && b.Label == nil
		})
	})
}

func (f *finder) attemptIn(l *Loop, stmts []ast.Stmt) bool {
	for i, s := range stmts {
		call, errv, results := f.errCall(s)
		if call == nil || f.cannotFail(call) {
			continue
		}
		if f.unwraps(call, errv) {
			return false
		}
		varies := f.varies(l, call, l.Body)
		// The branch: this if statement, or the first one after that tests
		// the error; failing that, an if on a decision drawn from the error
		// (retry, _ := shouldRetry(err, attempt); if !retry { break }).
		j, op, cond := -1, token.Token(0), ast.Expr(nil)
		if ifs, ok := s.(*ast.IfStmt); ok {
			j, op, cond = i, f.errCond(ifs.Cond, errv, call), ifs.Cond
			if op == 0 {
				// if retry, err := run(); !retry { return err }
				if op = f.decides(ifs.Cond, resultDecision(errv, results)); op != 0 {
					cond = call
				}
			}
		} else {
			j, op, cond = f.branchAfter(l, stmts, i, errv, call, results)
		}
		if op == 0 {
			if varies {
				return false
			}
			continue
		}
		if j > i && f.reassigned(append(stmts[i+1:j:j], stmts[j].(*ast.IfStmt).Init), errv) {
			// req, err = http.NewRequest(...); resp, err = c.Do(req); if
			// err != nil, or if err = c.Do(req); err != nil: the attempt
			// is the last call before the branch.
			continue
		}
		if f.branches(l, stmts[j].(*ast.IfStmt), op, stmts[j+1:]) {
			l.Call, l.Err, l.Results, l.Branch = call, errv, results, cond
			l.Between = append(l.Between, stmts[:i]...)
			for _, n := range stmts[i+1 : max(j, i+1)] {
				ifs, ok := n.(*ast.IfStmt)
				switch {
				case !ok:
				case f.errCond(ifs.Cond, errv, call) == token.NEQ && f.onlyNotes(ifs):
					l.Between = append(l.Between, ifs) // a note about the failure
				case f.guardedExit(l, []ast.Stmt{ifs}, false, false):
					// if errors.Is(err, ErrEmpty) { continue outer }: an
					// exit that a failed attempt passes on its way round.
					l.Between = append(l.Between, ifs)
				}
			}
			if l.Endless {
				varies = f.varies(l, call, &ast.BlockStmt{List: l.Between})
			}
			if varies {
				l.Call, l.Err, l.Results, l.Branch, l.Endless = nil, nil, nil, nil, false
				l.Between = nil
				return false
			}
			return true
		}
		l.Between, l.Success, l.Endless = nil, nil, false
		if varies {
			return false
		}
		if op == token.NEQ && f.statusBranch(l, stmts, j+1, results) {
			l.Call, l.Err, l.Results = call, errv, results
			l.Between = append(l.Between, stmts[:i]...)
			return true
		}
		l.Between, l.Success = nil, nil
	}
	return false
}

// reassigned reports whether one of stmts assigns errv the error of
// another call.
func (f *finder) reassigned(stmts []ast.Stmt, errv types.Object) bool {
	if errv == nil {
		return false
	}
	for _, s := range stmts {
		if _, ok := s.(*ast.AssignStmt); !ok || s == nil {
			continue
		}
		if call, v, _ := f.errCall(s); call != nil && v == errv {
			return true
		}
	}
	return false
}

// statusBranch matches a loop that gives up on an error but goes round on
// a status of the answer: resp, err := c.Do(req); if err != nil { return
// err }; if resp.StatusCode == 429 { <wait>; continue }; return. It looks
// for that if in stmts from index from, and fills in l's branch, success
// and failure path.
func (f *finder) statusBranch(l *Loop, stmts []ast.Stmt, from int, results []types.Object) bool {
	for k := from; k < len(stmts); k++ {
		ifs, ok := stmts[k].(*ast.IfStmt)
		if ok && ifs.Else == nil && f.statusTest(ifs.Cond, results) {
			body := ifs.Body.List
			if f.last(l, body) != again && !f.nestedAgain(l, body) {
				return false
			}
			rest := stmts[k+1:]
			m := f.indexTop(l, rest, leave)
			if m < 0 {
				return false
			}
			l.Branch, l.Success = ifs.Cond, rest[m]
			l.Between = append(l.Between, body...)
			return true
		}
		if f.exits(l, stmts[k]) != stay {
			return false
		}
	}
	return false
}

// statusTest reports whether cond compares a status of one of the
// attempt's results (resp.StatusCode == 429, one operand of a && or ||).
func (f *finder) statusTest(cond ast.Expr, results []types.Object) bool {
	// A comparison is judged by its operands; only && and || are
	// looked into.
	comparison := func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		return ok && b.Op != token.LAND && b.Op != token.LOR
	}
	return match.Any(cond, comparison, func(n ast.Node) bool {
		if !comparison(n) {
			return false
		}
		b := n.(*ast.BinaryExpr)
		for _, x := range []ast.Expr{b.X, b.Y} {
			sel, ok := ast.Unparen(x).(*ast.SelectorExpr)
			if !ok || !strings.Contains(strings.ToLower(sel.Sel.Name), "status") {
				continue
			}
			if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && slices.Contains(results, f.info.ObjectOf(id)) {
				return true
			}
		}
		return false
	})
}

// branchAfter finds the branch after the attempt at stmts[i]: the index
// of an if statement that tests the attempt's error, with token.EQL for a
// success test and token.NEQ for a failure test, and the condition that
// decides; or an if on a boolean decision computed from the error, where
// "if !retry" counts as a success test and "if retry" as a failure test,
// and the decision's expression is the condition; the decision may also be
// a boolean result of the attempt itself (retry, err = run(); if !retry {
// return err }). It returns op 0 if there is none before a statement that
// leaves the loop.
func (f *finder) branchAfter(l *Loop, stmts []ast.Stmt, i int, errv types.Object, call *ast.CallExpr, results []types.Object) (int, token.Token, ast.Expr) {
	var decide ast.Expr
	decision := resultDecision(errv, results)
	if decision != nil {
		decide = call
	}
	for k := i + 1; k < len(stmts); k++ {
		switch s := stmts[k].(type) {
		case *ast.IfStmt:
			if op := f.errCond(s.Cond, errv, call); op != 0 {
				if op == token.NEQ && f.onlyNotes(s) {
					break // if debug && err != nil { log(err) }: not the branch
				}
				return k, op, s.Cond
			}
			if s.Init == nil && s.Else == nil && f.sentinel(s.Cond, errv) && f.last(l, s.Body.List) == again && !f.lookedUp(stmts[:i], call) {
				// if errors.Is(err, errReconnect) { continue }; return err:
				// round on one error, out on any other or on success.
				return k, token.NEQ, s.Cond
			}
			if op := f.decides(s.Cond, decision); op != 0 {
				return k, op, decide
			}
		case *ast.AssignStmt:
			if d, c := f.decision(s, errv); d != nil && decision == nil {
				decision, decide = d, c
			}
		}
		if f.exits(l, stmts[k]) != stay {
			break
		}
	}
	return -1, 0, nil
}

// resultDecision returns the attempt's own boolean result that says
// whether to go round (retry, err = run(); if !retry { return err }),
// when its name says so (retry, shouldRetry, again, shouldContinue); or
// nil. Only a boolean named for it: more, err := it.Next() iterates.
func resultDecision(errv types.Object, results []types.Object) types.Object {
	if errv == nil {
		return nil
	}
	if carriesError(errv.Type()) {
		// res := c.attempt(req); if !res.Retry { break }: a result that
		// carries the error and the decision.
		t := errv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		st := t.Underlying().(*types.Struct)
		for i := range st.NumFields() {
			results = append(results, st.Field(i))
		}
	}
	for _, r := range results {
		name := strings.ToLower(r.Name())
		if types.Identical(r.Type().Underlying(), types.Typ[types.Bool]) &&
			(strings.Contains(name, "retr") || strings.Contains(name, "again") || name == "shouldcontinue") {
			return r
		}
	}
	return nil
}

// decides returns token.NEQ when cond is the decision to go round (if
// retry), token.EQL when it is its negation (if !retry), and 0 otherwise
// or when decision is nil.
func (f *finder) decides(cond ast.Expr, decision types.Object) token.Token {
	if decision == nil {
		return 0
	}
	names := func(e ast.Expr) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			return f.info.ObjectOf(e) == decision
		case *ast.SelectorExpr:
			return f.info.ObjectOf(e.Sel) == decision // res.Retry
		}
		return false
	}
	if names(cond) {
		return token.NEQ
	}
	if u, ok := ast.Unparen(cond).(*ast.UnaryExpr); ok && u.Op == token.NOT && names(u.X) {
		return token.EQL
	}
	return 0
}

// onlyNotes reports whether ifs, a failure test of the attempt's error
// (if debug && err != nil), neither leaves nor goes round: it has no
// else, and its body holds no return, goto, break, continue or panic. It
// is a note about the failure, such as a log line, which runs between
// attempts like the failure path, and the branch comes after it.
func (f *finder) onlyNotes(ifs *ast.IfStmt) bool {
	return ifs.Else == nil && ifs.Init == nil && !jumps(ifs)
}

// decision returns the boolean variable s assigns from an expression of
// the error errv (retry, reason := shouldRetry(err, resp, n); needsRetry
// := err != nil && !permanent), with that expression; or nil.
func (f *finder) decision(s *ast.AssignStmt, errv types.Object) (types.Object, ast.Expr) {
	if errv == nil || len(s.Rhs) != 1 {
		return nil, nil
	}
	id, ok := s.Lhs[0].(*ast.Ident)
	if !ok {
		return nil, nil
	}
	d := f.info.ObjectOf(id)
	if d == nil || !types.Identical(d.Type().Underlying(), types.Typ[types.Bool]) {
		return nil, nil
	}
	uses := false
	ast.Inspect(s.Rhs[0], func(n ast.Node) bool {
		if aid, ok := n.(*ast.Ident); ok && f.info.ObjectOf(aid) == errv {
			uses = true
		}
		return !uses
	})
	if !uses {
		return nil, nil
	}
	return d, s.Rhs[0]
}

// branches reports whether ifs, the branch on the attempt's error (op
// token.EQL for "err == nil", token.NEQ for "err != nil"), leaves the loop
// on success and goes round on failure; rest are the statements after it.
// It records the failure path in l.Between and the success exit.
func (f *finder) branches(l *Loop, ifs *ast.IfStmt, op token.Token, rest []ast.Stmt) bool {
	success, failure := ifs.Body.List, []ast.Stmt(nil)
	var noAnswer []ast.Stmt
	hasElse := ifs.Else != nil
	if elif, ok := ifs.Else.(*ast.IfStmt); ok && op == token.NEQ && f.last(l, ifs.Body.List) == again {
		// if err != nil { <failure>; continue } else if len(r) == 0 {
		// ... }: the else-if runs after a success, as if it followed.
		hasElse, rest = false, append([]ast.Stmt{elif}, rest...)
	}
	if hasElse {
		switch e := ifs.Else.(type) {
		case *ast.BlockStmt:
			failure = e.List
		case *ast.IfStmt:
			if op == token.NEQ {
				// if err != nil { log } else if leader == "" { log } else
				// { break }: no answer yet is a failure too, and only the
				// last else, with an answer, leaves.
				last, ok := e.Else.(*ast.BlockStmt)
				if !ok || e.Init != nil || !f.missing(e.Cond) || jumps(e.Body) || f.last(l, last.List) != leave {
					return false
				}
				failure = last.List
				noAnswer = e.Body.List
				break
			}
			// if err == nil { ... } else if errors.Is(err, ErrX) {
			// return }: the else-if runs on a failure.
			failure = []ast.Stmt{e}
		default:
			return false
		}
	}
	if op == token.NEQ {
		success, failure = failure, success
	}
	if op == token.EQL && f.last(l, success) != leave {
		// if err == nil { if resp.StatusCode < 300 { break }; err =
		// badStatus(resp) }: the success leaves only on a good answer,
		// and what follows that test runs on the failure path.
		if k := f.answerExit(l, success); k >= 0 {
			inner := success[k].(*ast.IfStmt).Body.List
			l.Between = append(l.Between, success[k+1:]...)
			success = inner
		}
	}
	switch {
	case op == token.EQL || hasElse:
		// if err == nil { ...; return } <failure: the rest>, which may
		// give up at its end once some path in it has gone round; or
		// if err == nil { ...; return } else { <failure> } (or the other
		// way), followed by the rest unless the failure goes round.
		path := rest
		if hasElse {
			path = failure
		}
		if f.last(l, success) != leave {
			return hasElse && f.bothRound(l, ifs, failure)
		}
		if k := f.indexTop(l, path, leave); k >= 0 && !f.nestedAgain(l, path[:k]) {
			return false
		}
		l.Success = success[len(success)-1]
		l.Between = append(l.Between, path...)
		l.Between = append(l.Between, noAnswer...)
		if hasElse && f.last(l, failure) != again {
			l.Between = append(l.Between, rest...)
		}
	default:
		// if err != nil { <failure>; continue } ...; return, or a failure
		// that goes round only on some errors and gives up on the others
		// (if err != nil { if temporary(err) { continue }; return err }).
		if len(failure) == 0 {
			return false
		}
		// if err != nil { goto reconnect }: the labelled statements at the
		// end of the body are the rest of the failure path, not of the
		// success path.
		var tail []ast.Stmt
		if b, ok := failure[len(failure)-1].(*ast.BranchStmt); ok {
			if tail = f.gotoTail(l, b); tail != nil {
				if k := slices.Index(rest, tail[0]); k >= 0 {
					rest = rest[:k]
				}
			}
		}
		failure = append(failure[:len(failure):len(failure)], tail...)
		if f.last(l, failure) != again && tail == nil {
			k := f.indexTop(l, failure, leave)
			switch {
			case k >= 0:
				if !f.nestedAgain(l, failure[:k]) {
					return false
				}
			case f.waitsThenChecks(l, failure, rest):
				l.Endless = true
				l.Between = append(l.Between, failure...)
				l.Between = append(l.Between, rest...)
				return true
			case !f.nestedAgain(l, failure) || !f.anyTop(l, rest, leave):
				// if err != nil { if retryable(err) { select { ...
				// case <-time.After(d): continue } } }; return resp, err:
				// a failure that does not go round falls into the exit it
				// shares with a success.
				return false
			}
		} else if f.anyTop(l, failure[:len(failure)-1], leave) {
			return false
		}
		k := f.indexTop(l, rest, leave)
		if k < 0 {
			// for { if err != nil { <failure>; continue }; serve() }: a
			// reconnect loop, which goes on after a success too (for {} or
			// for !closed {}, not a counting loop).
			fs, ok := l.Stmt.(*ast.ForStmt)
			if tail != nil && f.last(l, rest) == again {
				rest = rest[:len(rest)-1] // ...; continue; reconnect: ...
			}
			if !ok || fs.Init != nil || fs.Post != nil || f.anyTop(l, rest, again) {
				return false
			}
			l.Endless = true
			l.Between = append(l.Between, failure...)
			return true
		}
		l.Success = rest[k]
		l.Between = append(l.Between, failure...)
	}
	return true
}

// waitsThenChecks reports whether l is a for loop with no condition
// whose failure path only waits and falls through (if err := c.serve();
// err != nil { log(err); time.Sleep(d) }) to the rest of the body, which
// does nothing but check whether it was stopped (a select with a
// default, an if that leaves) before going round: a reconnect loop whose
// success and failure paths merge. The wait on the failure path alone
// tells it from periodic work, which waits on both.
func (f *finder) waitsThenChecks(l *Loop, failure, rest []ast.Stmt) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Init != nil || fs.Cond != nil || fs.Post != nil || len(rest) == 0 {
		return false
	}
	if f.nestedAgain(l, failure) || slices.ContainsFunc(failure, jumps) || len(f.waits(&Loop{Func: l.Func, Between: failure})) == 0 {
		return false
	}
	for _, s := range rest {
		switch s := s.(type) {
		case *ast.SelectStmt:
			if !slices.ContainsFunc(s.Body.List, func(c ast.Stmt) bool { return c.(*ast.CommClause).Comm == nil }) {
				return false // blocks: paced on both paths
			}
			for _, c := range s.Body.List {
				cc := c.(*ast.CommClause)
				if len(cc.Body) == 0 {
					continue
				}
				if _, ret := cc.Body[len(cc.Body)-1].(*ast.ReturnStmt); !ret {
					return false // a break here ends the select, not the loop
				}
			}
		case *ast.IfStmt:
			if s.Else != nil || f.last(l, s.Body.List) != leave {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// answerExit returns the index in stmts, the success side of a branch,
// of the one statement that leaves: an if without else that judges the
// answer (a status, a call, a nil test) and leaves the loop at its end;
// -1 when there is none, or another statement at the top leaves.
func (f *finder) answerExit(l *Loop, stmts []ast.Stmt) int {
	at := -1
	for k, s := range stmts {
		if f.exits(l, s) != stay {
			return -1
		}
		ifs, ok := s.(*ast.IfStmt)
		if !ok || ifs.Else != nil || ifs.Init != nil || !answers(ifs.Cond) || f.last(l, ifs.Body.List) != leave {
			continue
		}
		if at >= 0 {
			return -1
		}
		at = k
	}
	return at
}

// bothRound matches an endless loop whose branch on the attempt's error
// has an else, and neither side leaves: for { select { case <-t.C: if
// err := login(); err != nil { t.Reset(5 * time.Second) } else {
// t.Reset(ttl) } } }. It is a retry loop when the failure side waits
// before the next round (a timer re-armed, a sleep), or sets the delay
// of a wait at the top of the body (for { time.Sleep(wait); if err :=
// refresh(); err != nil { wait = time.Second } else { wait = ttl } });
// the failure side is what runs between attempts.
func (f *finder) bothRound(l *Loop, ifs *ast.IfStmt, failure []ast.Stmt) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Init != nil || fs.Cond != nil || fs.Post != nil || len(failure) == 0 || f.anyTop(l, failure, leave) {
		return false
	}
	if len(f.waits(&Loop{Func: l.Func, Between: failure})) == 0 && !f.setsLeadWait(l, ifs, failure) {
		return false
	}
	l.Endless = true
	l.Between = append(l.Between, failure...)
	return true
}

// setsLeadWait reports whether failure assigns a variable that a wait
// among the statements of l's body before ifs waits for.
func (f *finder) setsLeadWait(l *Loop, ifs *ast.IfStmt, failure []ast.Stmt) bool {
	var lead []ast.Stmt
	for _, s := range l.Body.List {
		if contains(s, ifs) {
			break
		}
		lead = append(lead, s)
	}
	for _, w := range f.waits(&Loop{Func: l.Func, Between: lead}) {
		for _, s := range failure {
			as, ok := s.(*ast.AssignStmt)
			if !ok {
				continue
			}
			for _, lhs := range as.Lhs {
				if id, ok := lhs.(*ast.Ident); ok && match.Mentions(f.info, w.Delay, f.info.ObjectOf(id)) {
					return true
				}
			}
		}
	}
	return false
}

// nestedAgain reports whether stmts hold, below their top level, a
// continue that goes round this loop: a retry on some failures only.
func (f *finder) nestedAgain(l *Loop, stmts []ast.Stmt) bool {
	// The body of an inner loop is searched on its own, as inner; below
	// a function literal is code that runs at another time.
	skip := func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return true
		}
		return false
	}
	var again func(n ast.Node, inner bool) bool
	again = func(n ast.Node, inner bool) bool {
		return match.Any(n, skip, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.ForStmt:
				return again(m.Body, true)
			case *ast.RangeStmt:
				return again(m.Body, true)
			case *ast.BranchStmt:
				switch m.Tok {
				case token.CONTINUE:
					if m.Label == nil {
						return !inner
					}
					return l.Label != nil && m.Label.Name == l.Label.Name
				case token.GOTO:
					return f.toTop(l, m) || f.gotoTail(l, m) != nil
				}
			}
			return false
		})
	}
	for _, s := range stmts {
		if _, top := s.(*ast.BranchStmt); !top && again(s, false) {
			return true
		}
	}
	return false
}

// errCall returns the call that statement s makes and whose error it
// keeps, with the variable holding the error and the other results; or a
// nil call.
func (f *finder) errCall(s ast.Stmt) (call *ast.CallExpr, errv types.Object, results []types.Object) {
	var as *ast.AssignStmt
	switch s := s.(type) {
	case *ast.AssignStmt:
		as = s
	case *ast.IfStmt:
		if init, ok := s.Init.(*ast.AssignStmt); ok {
			as = init
		} else if s.Init == nil {
			// if f() != nil { ... }
			if b, ok := ast.Unparen(s.Cond).(*ast.BinaryExpr); ok {
				if c, ok := ast.Unparen(b.X).(*ast.CallExpr); ok && match.IsNil(f.info, b.Y) && match.ReturnsError(f.info, c) {
					if _, tuple := f.info.TypeOf(c).(*types.Tuple); !tuple {
						return c, nil, nil
					}
				}
			}
		}
	}
	if as == nil || len(as.Rhs) != 1 {
		return nil, nil, nil
	}
	c, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
	if ok && len(as.Lhs) >= 1 && f.nilOnFailure(c) {
		if v := f.answerVar(as.Lhs[0]); v != nil {
			f.nilAnswers[v] = true
			return c, v, nil
		}
	}
	if !ok || (!match.ReturnsError(f.info, c) && !(len(as.Lhs) == 1 && carriesError(f.info.TypeOf(c)))) {
		return nil, nil, nil
	}
	if step := joinedStep(f.info, c); step != nil {
		// err = errors.Join(err, m.fetch(ctx)): the step whose error is
		// joined is the attempt's last call.
		c = step
	}
	last, ok := as.Lhs[len(as.Lhs)-1].(*ast.Ident)
	if !ok || last.Name == "_" {
		return nil, nil, nil
	}
	errv = f.info.ObjectOf(last)
	if errv == nil {
		return nil, nil, nil
	}
	for _, e := range as.Lhs[:len(as.Lhs)-1] {
		if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
			if o := f.info.ObjectOf(id); o != nil {
				results = append(results, o)
			}
		}
	}
	return c, errv, results
}

// joinedStep returns the last argument of an errors.Join call that is a
// call returning an error (errors.Join(err, step())), or nil.
func joinedStep(info *types.Info, c *ast.CallExpr) *ast.CallExpr {
	if !match.Func(match.Callee(info, c), "errors", "Join") {
		return nil
	}
	for i := len(c.Args) - 1; i >= 0; i-- {
		if a, ok := ast.Unparen(c.Args[i]).(*ast.CallExpr); ok && match.ReturnsError(info, a) {
			return a
		}
	}
	return nil
}

// carriesError reports whether t is a struct, or a pointer to one, with
// a field of type error: a result that carries the attempt's error
// (iter := q.Exec(); if iter.err == nil; res := db.Create(&v); if
// res.Error != nil).
func carriesError(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for i := range st.NumFields() {
		if match.IsError(st.Field(i).Type()) {
			return true
		}
	}
	return false
}

// errCond returns token.EQL for a success test, token.NEQ for a failure
// test, and 0 otherwise. A success test is "err == nil", or a disjunction
// with it as one operand ("err == nil || attempts == 0 ||
// !retryable(err)": leave on success or when giving up); a failure test
// is "err != nil", or a conjunction with it as one operand ("err != nil
// && retryable(err)": go round only on a retryable failure). The attempt
// call itself may stand for err when it is compared with nil directly.
//
// A success test may also ask for more than a nil error ("err == nil &&
// !badStatus(resp)", "err == nil && resp.StatusCode < 500": leave only on
// a good answer), and a failure test may go round on a bad answer too
// ("err != nil || resp.StatusCode >= 500").
func (f *finder) errCond(cond ast.Expr, errv types.Object, call *ast.CallExpr) token.Token {
	if op := f.errTest(cond, errv, call); op != 0 {
		return op
	}
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || (b.Op != token.LOR && b.Op != token.LAND) {
		return 0
	}
	ops := operands(cond, b.Op)
	for _, o := range ops {
		op := f.errCond(o, errv, call)
		switch {
		case op == 0:
			continue
		case (op == token.EQL) == (b.Op == token.LOR):
			// err == nil || giving up; err != nil && retryable(err)
			return op
		}
		// err == nil && good(resp); err != nil || resp.StatusCode >= 500;
		// res == nil || err != nil (no answer came back): the other
		// operands must judge the answer, not wait for progress (err ==
		// nil && n > 10 is a poll).
		for _, p := range ops {
			if p != o && !answerTest(p) && !(b.Op == token.LOR && f.missing(p)) {
				return 0
			}
		}
		return op
	}
	return 0
}

// answerTest reports whether e judges an answer: a call (badStatus(resp),
// resp.OK(), !retryable(resp)) or a comparison of a status code.
func answerTest(e ast.Expr) bool {
	e = ast.Unparen(e)
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.NOT {
		e = ast.Unparen(u.X)
	}
	switch e := e.(type) {
	case *ast.CallExpr:
		return true
	case *ast.BinaryExpr:
		if id, ok := ast.Unparen(e.Y).(*ast.Ident); ok && id.Name == "nil" && e.Op == token.NEQ {
			return true // conn != nil: an answer came back
		}
		if _, v := ast.Unparen(e.X).(*ast.Ident); v && e.Op == token.NEQ && emptyString(e.Y) {
			return true // leader != "": an answer came back
		}
		for _, x := range []ast.Expr{e.X, e.Y} {
			if sel, ok := ast.Unparen(x).(*ast.SelectorExpr); ok && strings.Contains(strings.ToLower(sel.Sel.Name), "status") {
				return true
			}
		}
	}
	return false
}

// missing reports whether e tests that a variable is nil (res == nil): in
// a failure test beside the error, an answer that did not come back. A
// field (c.node == nil) is state the loop looks up, not an answer.
func (f *finder) missing(e ast.Expr) bool {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	if !ok || b.Op != token.EQL {
		return false
	}
	x, y := ast.Unparen(b.X), ast.Unparen(b.Y)
	if match.IsNil(f.info, x) || emptyString(x) {
		x, y = y, x
	}
	_, variable := x.(*ast.Ident)
	return variable && (match.IsNil(f.info, y) || emptyString(y))
}

// emptyString reports whether e is the literal "".
func emptyString(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``")
}

// answers reports whether every operand of cond's && and || is an
// answerTest (resp.StatusCode >= 200 && resp.StatusCode < 300).
func answers(cond ast.Expr) bool {
	for _, a := range operands(cond, token.LAND) {
		for _, o := range operands(a, token.LOR) {
			if !answerTest(o) {
				return false
			}
		}
	}
	return true
}

// operands splits a op b op c into its operands.
func operands(e ast.Expr, op token.Token) []ast.Expr {
	if b, ok := ast.Unparen(e).(*ast.BinaryExpr); ok && b.Op == op {
		return append(operands(b.X, op), operands(b.Y, op)...)
	}
	return []ast.Expr{e}
}

// errTest returns token.EQL for "err == nil", token.NEQ for "err != nil",
// and 0 otherwise.
func (f *finder) errTest(cond ast.Expr, errv types.Object, call *ast.CallExpr) token.Token {
	b, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || (b.Op != token.EQL && b.Op != token.NEQ) {
		return 0
	}
	x, y := ast.Unparen(b.X), ast.Unparen(b.Y)
	if match.IsNil(f.info, x) {
		x, y = y, x
	}
	if !match.IsNil(f.info, y) {
		return 0
	}
	if errv == nil {
		if x == ast.Expr(call) {
			return b.Op
		}
		return 0
	}
	if f.nilAnswers[errv] {
		// An answer that is nil on failure: data != nil is the success.
		if f.answerVar(x) == errv {
			return map[token.Token]token.Token{token.EQL: token.NEQ, token.NEQ: token.EQL}[b.Op]
		}
		return 0
	}
	if id, ok := x.(*ast.Ident); ok && f.info.ObjectOf(id) == errv {
		return b.Op
	}
	// iter.err == nil: the error field of a result that carries it.
	if sel, ok := x.(*ast.SelectorExpr); ok && match.IsError(f.info.TypeOf(sel)) {
		if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && f.info.ObjectOf(id) == errv {
			return b.Op
		}
	}
	return 0
}

// condAttempt matches a loop whose condition is the branch: it goes round
// while the attempt's error is set (err != nil, errors.Is(err, ErrX),
// retryable(err), as one of the conjuncts of the condition), and the
// attempt assigns that error in the body or the post statement: for err
// != nil { ...; err = call() }, or for err := call(); err != nil; err =
// call() {}.
func (f *finder) condAttempt(l *Loop) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Cond == nil {
		return false
	}
	var errs []types.Object
	for _, c := range operands(fs.Cond, token.LAND) {
		if v := f.failing(c); v != nil {
			errs = append(errs, v)
		}
	}
	// The attempt: the post statement, or an assignment in the body, at
	// any depth outside function literals and inner loops (if ttl > 0 {
	// resp, err = call(ttl) } else { resp, err = call(0) }).
	var stmts []ast.Stmt
	if fs.Post != nil {
		stmts = append(stmts, fs.Post)
	}
	ast.Inspect(l.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return false
		case *ast.AssignStmt:
			stmts = append(stmts, n)
		}
		return true
	})
	for _, s := range stmts {
		call, v, results := f.errCall(s)
		if call != nil && slices.Contains(errs, v) && !f.varies(l, call, l.Body) && !f.unwraps(call, v) {
			l.Call, l.Err, l.Results, l.Branch = call, v, results, fs.Cond
			l.Between = l.Body.List
			return true
		}
	}
	return false
}

// failing returns the error variable e tests for a failure: err != nil,
// or a call taking err (errors.Is(err, ErrX), retryable(err)); or nil.
func (f *finder) failing(e ast.Expr) types.Object {
	errVar := func(x ast.Expr) types.Object {
		id, ok := ast.Unparen(x).(*ast.Ident)
		if !ok {
			return nil
		}
		if v := f.info.ObjectOf(id); v != nil && match.IsError(v.Type()) {
			return v
		}
		return nil
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		if e.Op == token.NEQ && match.IsNil(f.info, e.Y) {
			return errVar(e.X)
		}
	case *ast.CallExpr:
		if len(e.Args) > 0 {
			return errVar(e.Args[0])
		}
	}
	return nil
}
