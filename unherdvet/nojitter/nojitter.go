package nojitter

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"go/version"
	"slices"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/assign"
	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/fix"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

// reportLockstep reports the waits of l when none of them is random or
// follows the server.
func reportLockstep(p *check.Pass, l *loops.Loop) {
	if match.Local(p.TypesInfo, p.Bodies(), l.Call, 2) || periodic(p.TypesInfo, l) {
		return
	}
	c := &classifier{info: p.TypesInfo, idx: p.Assign, loop: l, scope: l.Stmt, bodies: p.Bodies(),
		seen: make(map[types.Object]kind), funcs: make(map[funcResult]kind), files: p.Files}
	kinds := make([]kind, len(l.Waits))
	random := false
	for i, w := range l.Waits {
		if w.Scope != nil {
			// The delay a helper makes: classified in its body.
			c.scope, c.seen = w.Scope, make(map[types.Object]kind)
		}
		c.wait = w
		kinds[i] = c.expr(w.Delay)
		if kinds[i] < unknownKind && c.spins(w.Delay, 3) {
			kinds[i] = spinKind
		}
		c.scope, c.seen, c.wait = l.Stmt, make(map[types.Object]kind), nil
		random = random || (kinds[i] >= serverKind && kinds[i] != spinKind)
	}
	if random {
		return
	}
	for i, w := range l.Waits {
		if msg := message(p.Pass, w, kinds[i]); msg != "" {
			var fixes []analysis.SuggestedFix
			if w.Scope != nil {
				msg = fmt.Sprintf("retry loop waits, in %s, a delay computed without jitter: %s", types.ExprString(w.Call.Fun), advice)
			} else if kinds[i] == constKind {
				fixes = jitterFix(p.Pass, w)
			}
			p.ReportFix(w.Call, msg, fixes...)
		}
	}
}

// jitterFix replaces a constant delay d > 0 with d/2 + rand.N(d), from
// math/rand/v2: the same mean, spread over [d/2, 3d/2). It imports
// math/rand/v2 when the file does not, and offers nothing when another
// package takes the name rand.
func jitterFix(pass *analysis.Pass, w *loops.Wait) []analysis.SuggestedFix {
	tv := pass.TypesInfo.Types[w.Delay]
	if tv.Value == nil || constant.Sign(tv.Value) <= 0 {
		return nil
	}
	file := fix.File(pass, w.Delay.Pos())
	if file == nil || (file.GoVersion != "" && version.Compare(file.GoVersion, "go1.22") < 0) ||
		(pass.Pkg.GoVersion() != "" && version.Compare(pass.Pkg.GoVersion(), "go1.22") < 0) {
		return nil // math/rand/v2 came with Go 1.22
	}
	rand, edits, ok := fix.Import(file, "math/rand/v2", "rand")
	if !ok {
		return nil
	}
	src := fix.Source(pass.Fset, w.Delay)
	d, n := src, src
	if _, ok := ast.Unparen(w.Delay).(*ast.BinaryExpr); ok {
		d = "(" + src + ")"
	}
	if !typedDuration(pass.TypesInfo, w.Delay) {
		// rand.N(1000) would be an int: name the type.
		sel, ok := ast.Unparen(w.Call.Fun).(*ast.SelectorExpr)
		if !ok {
			return nil
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return nil
		}
		n = id.Name + ".Duration(" + src + ")"
	}
	edits = append(edits, analysis.TextEdit{Pos: w.Delay.Pos(), End: w.Delay.End(), NewText: []byte(d + "/2 + " + rand + ".N(" + n + ")")})
	return []analysis.SuggestedFix{{Message: "spread the delay at random around the same mean", TextEdits: edits}}
}

// typedDuration reports whether e holds a constant or variable of type
// time.Duration, so that rand.N(e) is a duration too.
func typedDuration(info *types.Info, e ast.Expr) bool {
	for n := range ast.Preorder(e) {
		if id, ok := n.(*ast.Ident); ok {
			if o := info.Uses[id]; o != nil && match.Named(o.Type(), "time", "Duration") {
				return true
			}
		}
	}
	return false
}

const advice = "clients that failed together retry in lockstep; use retry.Do with the default policy (capped exponential backoff with full jitter)"

func message(pass *analysis.Pass, w *loops.Wait, k kind) string {
	switch k {
	case constKind:
		if v := pass.TypesInfo.Types[w.Delay].Value; v != nil {
			if n, ok := constant.Int64Val(constant.ToInt(v)); ok {
				return fmt.Sprintf("retry loop waits a constant %v between attempts: %s", time.Duration(n), advice)
			}
		}
		return "retry loop waits a constant delay between attempts: " + advice
	case fixedKind:
		return fmt.Sprintf("retry loop waits the same delay (%s) between every attempt: %s", types.ExprString(w.Delay), advice)
	case growingKind:
		return "retry loop's delay grows without jitter: " + advice
	}
	return ""
}

// spin is the constant wait below which a loop is taken to spin on a
// local resource (a pool's free connection, a lock) rather than to retry
// a service on a schedule: a few milliseconds, far under any network
// round trip that could line clients up.
const spin = 10 * time.Millisecond

// spins reports whether delay starts under spin: a constant under it, or
// a variable or field every value of which, outside the loop (the
// package's assignments and composite literals), starts under it (interval
// := policy.Pause, with Pause: time.Millisecond the only value given). A
// loop that only multiplies such a delay by a factor of the caller's
// still spins by default. depth bounds the variables followed.
func (c *classifier) spins(delay ast.Expr, depth int) bool {
	if tv := c.info.Types[delay]; tv.Value != nil {
		n, ok := constant.Int64Val(constant.ToInt(tv.Value))
		return ok && time.Duration(n) < spin
	}
	if depth == 0 {
		return false
	}
	if call, ok := ast.Unparen(delay).(*ast.CallExpr); ok && len(call.Args) == 1 && c.info.Types[call.Fun].IsType() {
		return c.spins(call.Args[0], depth) // time.Duration(d)
	}
	v := match.VarOf(c.info, delay)
	if v == nil {
		return false
	}
	var values []ast.Expr
	for _, a := range c.idx[v] {
		if a.Stmt.Pos() >= c.loop.Stmt.Pos() && a.Stmt.End() <= c.loop.Stmt.End() {
			continue // inside the loop: growth, checked by the kind
		}
		if a.Rhs == nil || a.Tuple {
			return false
		}
		values = append(values, a.Rhs)
	}
	if v.IsField() {
		values = append(values, c.fieldValues(v)...)
	}
	for _, x := range values {
		if !c.spins(x, depth-1) {
			return false
		}
	}
	return len(values) > 0
}

// kind is what a delay expression is, from the least to the most
// variable; combining two takes the larger.
type kind int

const (
	constKind   kind = iota // a constant
	fixedKind               // the same value on every attempt
	growingKind             // grows with the attempt, without randomness
	unknownKind             // a call the analyzer does not follow
	serverKind              // given by the server: a response's interval or Retry-After
	randomKind              // drawn from a random source
	spinKind                // starts under spin: a wait on a local resource, not a schedule
)

type classifier struct {
	info *types.Info
	idx  assign.Index
	loop *loops.Loop
	// scope is the code that runs again on each attempt: the loop, or
	// the body of a function the loop calls for its delay.
	scope  ast.Node
	bodies map[*types.Func]*ast.BlockStmt
	// seen memoises variables; a variable being classified maps to
	// growingKind, so that d = d*2 reads as growth.
	seen map[types.Object]kind
	// funcs memoises the package's functions by what they return; one
	// being classified maps to unknownKind.
	funcs map[funcResult]kind
	files []*ast.File
	// fields maps each field to the values composite literals give it,
	// built on first use.
	fields map[*types.Var][]ast.Expr
	// wait is the wait whose delay is being classified, nil in a
	// helper's body.
	wait *loops.Wait
}

func (c *classifier) expr(e ast.Expr) kind {
	if tv, ok := c.info.Types[e]; ok && tv.Value != nil {
		return constKind
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.expr(e.X)
	case *ast.UnaryExpr:
		return c.expr(e.X)
	case *ast.BinaryExpr:
		return max(c.expr(e.X), c.expr(e.Y))
	case *ast.Ident:
		return c.variable(c.info.ObjectOf(e))
	case *ast.SelectorExpr:
		if id, ok := ast.Unparen(e.X).(*ast.Ident); ok {
			if _, pkg := c.info.Uses[id].(*types.PkgName); pkg {
				return c.variable(c.info.ObjectOf(e.Sel))
			}
		}
		if sel := c.info.Selections[e]; sel != nil && sel.Kind() == types.FieldVal {
			if c.fromServer(e) {
				return serverKind
			}
			// A field written inside the loop is not followed.
			if len(c.idx.Within(sel.Obj(), c.scope)) > 0 {
				return unknownKind
			}
			return max(fixedKind, c.expr(e.X))
		}
		return unknownKind
	case *ast.IndexExpr:
		// A schedule: delays[attempt], from a list of constants.
		if k := c.expr(e.X); k >= unknownKind {
			return k
		}
		return max(growingKind, c.expr(e.Index))
	case *ast.CompositeLit:
		k := constKind
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			k = max(k, c.expr(el))
		}
		return k
	case *ast.CallExpr:
		return c.call(e)
	}
	return unknownKind
}

// fromServer reports whether a field selection reads a value the server
// sent: a field named for an interval or a wait (Interval, RetryAfter,
// PollDelay) of a value that a call returned or decoded, as opposed to
// one of a configuration the caller was given.
func (c *classifier) fromServer(e *ast.SelectorExpr) bool {
	name := strings.ToLower(e.Sel.Name)
	if !strings.Contains(name, "interval") && !strings.Contains(name, "after") && !strings.Contains(name, "wait") &&
		!strings.Contains(name, "delay") && !strings.Contains(name, "backoff") && !strings.Contains(name, "poll") {
		return false
	}
	if strings.Contains(name, "poll") && exchanged(c.info.TypeOf(e.X)) {
		// A poll interval carried by a request or response (the interval
		// of an OAuth device flow): the loop polls at the pace the server
		// gave, it is not backing off from failures. A configuration's
		// poll interval (config.LookupdPollInterval) is no such thing.
		return true
	}
	x := ast.Unparen(e.X)
	for {
		sel, ok := x.(*ast.SelectorExpr)
		if !ok {
			break
		}
		x = ast.Unparen(sel.X)
	}
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := c.info.ObjectOf(id).(*types.Var)
	if !ok {
		return false
	}
	if slices.Contains(c.loop.Results, types.Object(v)) {
		return true
	}
	for _, a := range c.idx[v] {
		if a.Tuple {
			return true // resp, err := call()
		}
	}
	// json.Unmarshal(body, &v), dec.Decode(&v)
	decoded := false
	for _, body := range []*ast.BlockStmt{c.loop.Func.Body, c.loop.Func.Outermost().Body} {
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || decoded {
				return !decoded
			}
			if fn := match.Callee(c.info, call); fn == nil || (fn.Name() != "Unmarshal" && fn.Name() != "Decode") {
				return true
			}
			for _, a := range call.Args {
				if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
					if aid, ok := ast.Unparen(u.X).(*ast.Ident); ok && c.info.ObjectOf(aid) == v {
						decoded = true
					}
				}
				if aid, ok := ast.Unparen(a).(*ast.Ident); ok && c.info.ObjectOf(aid) == v {
					decoded = true
				}
			}
			return !decoded
		})
	}
	return decoded
}

// exchanged reports whether t (or what it points to) is a named type whose
// name says it is a message exchanged with a server: a request, a
// response, a result or a reply.
func exchanged(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok {
		return false
	}
	name := strings.ToLower(n.Obj().Name())
	for _, w := range []string{"request", "response", "result", "reply"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func (c *classifier) call(e *ast.CallExpr) kind {
	if tv, ok := c.info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
		return c.expr(e.Args[0]) // a conversion
	}
	if id, ok := ast.Unparen(e.Fun).(*ast.Ident); ok {
		if b, ok := c.info.Uses[id].(*types.Builtin); ok && (b.Name() == "min" || b.Name() == "max") {
			return c.args(e)
		}
	}
	fn := match.Callee(c.info, e)
	if fn == nil {
		return c.funcValue(e)
	}
	switch {
	case match.IsRand(fn):
		return randomKind
	case match.Func(fn, "math", "Pow", "Exp2", "Min", "Max", "Floor", "Ceil", "Round", "Trunc"):
		return c.args(e)
	case match.Method(fn, "time", "Duration", "Seconds", "Milliseconds", "Microseconds", "Nanoseconds", "Round", "Truncate"):
		return max(c.args(e), c.expr(e.Fun.(*ast.SelectorExpr).X))
	}
	if fn == nil {
		return unknownKind
	}
	if n := strings.ToLower(fn.Name()); (n == "max" || n == "min") && len(e.Args) > 0 && c.durations(e.Args) {
		return c.args(e) // timex.Max(a, b): a helper's min or max of durations
	}
	if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && c.info.Selections[sel] != nil {
		if k, ok := c.jitterless(sel.X); ok {
			return k
		}
	}
	return c.helper(fn, e)
}

// funcValue classifies a call of a function-valued variable or field
// (c.Backoff(min, max, n, resp)) by the package's functions it is ever
// given, in an assignment or a composite literal (Backoff:
// DefaultBackoff); unknownKind when it is given anything else.
func (c *classifier) funcValue(e *ast.CallExpr) kind {
	values := c.given(e.Fun)
	if len(values) == 0 {
		return unknownKind
	}
	k := constKind
	for _, val := range values {
		var fn *types.Func
		switch val := ast.Unparen(val).(type) {
		case *ast.Ident:
			fn, _ = c.info.ObjectOf(val).(*types.Func)
		case *ast.SelectorExpr:
			fn, _ = c.info.ObjectOf(val.Sel).(*types.Func)
		case *ast.FuncLit:
			// computeBackoff := func(n int) time.Duration { ... }
			k = max(k, c.bodyReturns(val.Body, 0), c.args(e))
			continue
		case *ast.CallExpr:
			// ReconnectBackoff = NewConstantBackoff(10 * time.Second): a
			// function of the package that returns the delay function.
			fk := c.factory(val, e)
			if fk >= unknownKind {
				return fk
			}
			k = max(k, fk)
			continue
		}
		if fn == nil {
			return unknownKind
		}
		k = max(k, c.helper(fn, e))
	}
	return k
}

// factory classifies the delay that call, a call of the package's
// function value made by the call factory (NewConstantBackoff(d)),
// returns: what the function literals factory's body returns give back,
// with factory's arguments, and call's own arguments when those
// literals' results depend on their parameters (the attempt).
func (c *classifier) factory(factory, call *ast.CallExpr) kind {
	fn := match.Callee(c.info, factory)
	body := c.bodies[fn]
	if body == nil {
		return unknownKind
	}
	k, n := c.args(factory), 0
	ast.Inspect(body, func(node ast.Node) bool {
		r, ok := node.(*ast.ReturnStmt)
		if _, lit := node.(*ast.FuncLit); lit {
			return false
		}
		if !ok {
			return true
		}
		if len(r.Results) != 1 {
			k = max(k, unknownKind)
			return false
		}
		lit, ok := ast.Unparen(r.Results[0]).(*ast.FuncLit)
		if !ok {
			k = max(k, unknownKind)
			return false
		}
		n++
		k = max(k, c.bodyReturns(lit.Body, 0))
		sig, _ := c.info.TypeOf(lit).(*types.Signature)
		for i := range sig.Params().Len() {
			if match.Mentions(c.info, lit.Body, sig.Params().At(i)) && c.returnsMention(lit.Body, sig.Params().At(i)) {
				k = max(k, c.args(call))
			}
		}
		return false
	})
	if n == 0 {
		return unknownKind
	}
	return k
}

// returnsMention reports whether a return statement of body (outside
// the literals in it) mentions obj.
func (c *classifier) returnsMention(body *ast.BlockStmt, obj types.Object) bool {
	return match.AnyReturn(body, func(e ast.Expr) bool { return match.Mentions(c.info, e, obj) })
}

// given returns the values the variable or field x names is given in
// the package, by assignments and composite literals; nil when x names
// neither, or one of its writes has no single value (a tuple, x++).
func (c *classifier) given(x ast.Expr) []ast.Expr {
	v := match.VarOf(c.info, x)
	if v == nil {
		return nil
	}
	var values []ast.Expr
	for _, a := range c.idx[v] {
		if a.Rhs == nil || a.Tuple {
			return nil
		}
		values = append(values, a.Rhs)
	}
	if v.IsField() {
		values = append(values, c.fieldValues(v)...)
	}
	return values
}

// fieldValues returns the values composite literals of the package give
// field.
func (c *classifier) fieldValues(field *types.Var) []ast.Expr {
	if c.fields == nil {
		c.fields = make(map[*types.Var][]ast.Expr)
		for _, f := range c.files {
			ast.Inspect(f, func(n ast.Node) bool {
				if kv, ok := n.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok {
						if fv, ok := c.info.ObjectOf(id).(*types.Var); ok && fv.IsField() {
							c.fields[fv] = append(c.fields[fv], kv.Value)
						}
					}
				}
				return true
			})
		}
	}
	return c.fields[field]
}

// durations reports whether every one of args is a time.Duration.
func (c *classifier) durations(args []ast.Expr) bool {
	for _, a := range args {
		if !match.Named(c.info.TypeOf(a), "time", "Duration") {
			return false
		}
	}
	return true
}

// helper classifies a call of one of the package's functions or methods
// by what its body returns, and by the arguments it is given: a delay
// function of the attempt number without randomness grows without
// jitter.
func (c *classifier) helper(fn *types.Func, e *ast.CallExpr) kind {
	return c.result(fn, e, 0)
}

// result classifies the index-th result of a call of fn, a function or
// method of the package, or a method of an interface whose
// implementations in the package are followed (the Syncer's
// OnFailedSync): those the receiver is given when the package shows
// them all (see concrete), else every one.
func (c *classifier) result(fn *types.Func, e *ast.CallExpr, index int) kind {
	var impls []*types.Func
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
		iface, _ := recv.Type().Underlying().(*types.Interface)
		// The implementations the receiver is given in the package (a
		// configuration's default policy), when they are all known.
		var given []types.Type
		if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok {
			given = c.concrete(sel.X, 3)
		}
		for m := range c.bodies {
			r := m.Type().(*types.Signature).Recv()
			if m.Name() != fn.Name() || r == nil || iface == nil || !types.Implements(r.Type(), iface) {
				continue
			}
			if given != nil && !slices.ContainsFunc(given, func(t types.Type) bool { return types.Identical(t, r.Type()) }) {
				continue
			}
			impls = append(impls, m)
		}
	} else if c.bodies[fn] != nil {
		impls = []*types.Func{fn}
	}
	if len(impls) == 0 {
		return unknownKind
	}
	k := constKind
	for _, m := range impls {
		k = max(k, c.returns(m, index))
	}
	if k >= unknownKind {
		return k
	}
	// The numbers it is given (the attempt, the bounds) decide; other
	// arguments (the last response) only feed the returns classified
	// above.
	for _, a := range e.Args {
		if b, ok := c.info.TypeOf(a).Underlying().(*types.Basic); ok && b.Info()&types.IsNumeric != 0 {
			k = max(k, c.expr(a))
		}
	}
	return k
}

// concrete returns the types of the values an interface-typed
// expression is given in the package: x is a variable or field whose
// every write and composite-literal value is a composite literal (or its
// address), or another such variable or field (p := cfg.Reconnect, with
// Reconnect: &constantPolicy{...} in the default configuration),
// followed depth levels. It returns nil when one of them is anything
// else, or there are none.
func (c *classifier) concrete(x ast.Expr, depth int) []types.Type {
	if depth == 0 {
		return nil
	}
	x = ast.Unparen(x)
	if u, ok := x.(*ast.UnaryExpr); ok && u.Op == token.AND {
		if lit, ok := ast.Unparen(u.X).(*ast.CompositeLit); ok {
			return []types.Type{types.NewPointer(c.info.TypeOf(lit))}
		}
		return nil
	}
	if lit, ok := x.(*ast.CompositeLit); ok {
		return []types.Type{c.info.TypeOf(lit)}
	}
	var out []types.Type
	for _, val := range c.given(x) {
		ts := c.concrete(val, depth-1)
		if ts == nil {
			return nil
		}
		out = append(out, ts...)
	}
	return out
}

// returns classifies the index-th result of fn's return statements,
// memoised.
func (c *classifier) returns(fn *types.Func, index int) kind {
	key := funcResult{fn, index}
	if k, ok := c.funcs[key]; ok {
		return k
	}
	c.funcs[key] = unknownKind
	k := c.bodyReturns(c.bodies[fn], index)
	c.funcs[key] = k
	return k
}

// bodyReturns classifies the index-th result of the return statements of
// a function body (outside the literals in it).
func (c *classifier) bodyReturns(body *ast.BlockStmt, index int) kind {
	sub := &classifier{info: c.info, idx: c.idx, loop: c.loop, scope: body, bodies: c.bodies,
		seen: make(map[types.Object]kind), funcs: c.funcs, files: c.files, fields: c.fields}
	k, own, n := constKind, constKind, 0
	ast.Inspect(body, func(node ast.Node) bool {
		switch r := node.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			n++
			if index >= len(r.Results) {
				k = max(k, unknownKind)
				return false
			}
			rk := sub.expr(r.Results[index])
			k = max(k, rk)
			if rk < unknownKind {
				own = max(own, rk)
			}
		}
		return true
	})
	switch {
	case n == 0:
		k = unknownKind
	case own >= fixedKind && k != randomKind:
		// A schedule of its own, when the server's Retry-After (or a
		// call not followed) gives nothing.
		k = own
	}
	return k
}

// funcResult names one result of a function.
type funcResult struct {
	fn    *types.Func
	index int
}

// jitterless classifies a backoff struct by its jitter field: x's type
// has a field named Jitter, JitterFactor or RandomizationFactor, and x is
// a variable whose every value is a composite literal of that type. It
// returns growingKind when the field is left zero in every literal and
// never set, randomKind when it is set; ok is false when x is no such
// struct.
func (c *classifier) jitterless(x ast.Expr) (kind, bool) {
	t := c.info.TypeOf(x)
	if t == nil {
		return 0, false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return 0, false
	}
	var field *types.Var
	for i := range st.NumFields() {
		switch strings.ToLower(st.Field(i).Name()) {
		case "jitter", "jitterfactor", "randomizationfactor":
			field = st.Field(i)
		}
	}
	if field == nil {
		return 0, false
	}
	// A variable (b := &backoff.Backoff{...}), or a field (s.backoff,
	// set to one in a constructor).
	var v types.Object
	switch x := ast.Unparen(x).(type) {
	case *ast.Ident:
		v = c.info.ObjectOf(x)
	case *ast.SelectorExpr:
		if fv, ok := c.info.ObjectOf(x.Sel).(*types.Var); ok && fv.IsField() {
			v = fv
		}
	}
	if v == nil {
		return unknownKind, true
	}
	writes := c.idx[v]
	if len(writes) == 0 {
		return unknownKind, true
	}
	for _, w := range writes {
		rhs := ast.Unparen(w.Rhs)
		if u, ok := rhs.(*ast.UnaryExpr); ok && u.Op == token.AND {
			rhs = ast.Unparen(u.X)
		}
		lit, ok := rhs.(*ast.CompositeLit)
		if !ok || w.Tuple {
			return unknownKind, true
		}
		for _, el := range lit.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				return unknownKind, true
			}
			if k, ok := kv.Key.(*ast.Ident); ok && c.info.ObjectOf(k) == field {
				tv := c.info.Types[kv.Value]
				switch {
				case tv.Value == nil:
					return randomKind, true
				case tv.Value.Kind() == constant.Bool:
					if constant.BoolVal(tv.Value) {
						return randomKind, true // Jitter: true
					}
				case constant.Sign(tv.Value) != 0:
					return randomKind, true
				}
			}
		}
	}
	// b.Jitter = 0.2 somewhere
	for _, w := range c.idx[field] {
		if sel, ok := w.Lhs.(*ast.SelectorExpr); ok {
			switch x := ast.Unparen(sel.X).(type) {
			case *ast.Ident:
				if c.info.ObjectOf(x) == v {
					return randomKind, true
				}
			case *ast.SelectorExpr:
				if c.info.ObjectOf(x.Sel) == v {
					return randomKind, true // s.backoff.Jitter = true
				}
			}
		}
	}
	return growingKind, true
}

func (c *classifier) args(e *ast.CallExpr) kind {
	k := constKind
	for _, a := range e.Args {
		k = max(k, c.expr(a))
	}
	return k
}

// variable classifies what a variable holds at the wait.
func (c *classifier) variable(obj types.Object) kind {
	v, ok := obj.(*types.Var)
	if !ok {
		if _, isConst := obj.(*types.Const); isConst {
			return constKind
		}
		return unknownKind
	}
	if k, ok := c.seen[v]; ok {
		return k
	}
	c.seen[v] = growingKind
	k := c.writes(v)
	c.seen[v] = k
	return k
}

func (c *classifier) writes(v *types.Var) kind {
	inside := c.reaching(v, c.idx.Within(v, c.scope))
	// Drawn at random or given by the server before the loop, it stays
	// so whatever the loop adds (interval += 5 on slow_down).
	for _, a := range c.idx[v] {
		if a.Rhs == nil || a.Tuple || (a.Stmt.Pos() >= c.scope.Pos() && a.Stmt.End() <= c.scope.End()) {
			continue
		}
		if c.usesRand(a.Rhs) {
			return randomKind
		}
		if k := c.expr(a.Rhs); k >= serverKind {
			return k
		}
	}
	if len(inside) == 0 {
		if c.passedOn(v) {
			return growingKind
		}
		return fixedKind // loop-invariant
	}
	k, server := fixedKind, false
	for _, a := range inside {
		switch {
		case a.Rhs != nil && !a.Tuple && c.expr(a.Rhs) == serverKind:
			server = true // given by the server on some failures
		case a.Op == token.RANGE && c.neverSet(a.Stmt):
			// for _, d := range opts.customBackoff, a field the package
			// never sets: what schedule it holds, the program does not
			// show.
			k = max(k, unknownKind)
		case a.Op == token.RANGE || a.Op == token.INC || a.Op == token.DEC:
			k = max(k, growingKind) // a counter
		case a.Op == token.VAR && a.Rhs == nil:
			// var wait time.Duration: zero, a constant
		case a.Tuple:
			// duration, err := syncer.OnFailedSync(res, err)
			call, ok := ast.Unparen(a.Rhs).(*ast.CallExpr)
			if !ok {
				k = max(k, unknownKind) // v, ok := m[key]; v, ok := x.(T)
				break
			}
			fn := match.Callee(c.info, call)
			if fn == nil {
				k = max(k, unknownKind)
				break
			}
			k = max(k, c.result(fn, call, a.Index))
		case a.Rhs == nil:
			k = max(k, unknownKind)
		case a.Op == token.DEFINE || a.Op == token.ASSIGN || a.Op == token.VAR:
			rk := c.expr(a.Rhs)
			if rk <= fixedKind && match.Mentions(c.info, a.Rhs, v) {
				rk = growingKind
			}
			k = max(k, rk)
		default: // d *= 2, d += step, d <<= 1
			k = max(k, growingKind, c.expr(a.Rhs))
		}
	}
	if server && k != growingKind {
		// Only a schedule of its own, used when the server gives no
		// wait, still makes the clients' waits alike.
		return serverKind
	}
	if k == fixedKind && c.steps(inside) {
		// backoff = 200ms here, backoff = time.Second there: a schedule
		// that steps up, with no randomness.
		return growingKind
	}
	return k
}

// passedOn reports whether v, a delay the loop leaves alone, is a
// parameter that a retry by recursion hands to the next attempt changed
// by arithmetic on itself (return c.send(req, n-1, wait*2)): each call
// waits longer, without randomness.
func (c *classifier) passedOn(v *types.Var) bool {
	l := c.loop
	if l.Shape != loops.Recursion || c.scope != ast.Node(l.Stmt) || l.Func.Sig == nil {
		return false
	}
	param := false
	for i := range l.Func.Sig.Params().Len() {
		param = param || l.Func.Sig.Params().At(i) == v
	}
	if !param {
		return false
	}
	grown := false
	ast.Inspect(l.At, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || grown {
			return !grown
		}
		for _, a := range call.Args {
			if b, ok := ast.Unparen(a).(*ast.BinaryExpr); ok && match.Mentions(c.info, b, v) {
				grown = true
			}
		}
		return !grown
	})
	return grown
}

// steps reports whether writes give a variable two different constants.
func (c *classifier) steps(writes []assign.Assign) bool {
	var first constant.Value
	for _, a := range writes {
		if a.Rhs == nil || a.Tuple {
			continue
		}
		v := c.info.Types[a.Rhs].Value
		if v == nil {
			continue
		}
		if first == nil {
			first = v
		} else if !constant.Compare(first, token.EQL, v) {
			return true
		}
	}
	return false
}

// reaching narrows inside, the writes of v in the loop, to those that
// reach a wait at the top of the loop after a failure, when the failure
// path sets v: for { if wait > 0 { time.Sleep(wait) }; wait =
// interval(); err := call(); if err != nil { wait = 3 * time.Second;
// continue } }. The failure path's writes reach the wait, and so do those
// before it; one between the wait and the attempt is overwritten on the
// way round.
func (c *classifier) reaching(v *types.Var, inside []assign.Assign) []assign.Assign {
	l, w := c.loop, c.wait
	if w == nil || c.scope != ast.Node(l.Stmt) || l.Shape != loops.For || w.Call.End() > l.Call.Pos() {
		return inside
	}
	failing := func(a assign.Assign) bool {
		for _, s := range l.Between {
			if s.Pos() > l.Call.End() && s.Pos() <= a.Stmt.Pos() && a.Stmt.End() <= s.End() {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(inside, failing) {
		return inside
	}
	var out []assign.Assign
	for _, a := range inside {
		if failing(a) || a.Stmt.End() <= w.Call.Pos() {
			out = append(out, a)
		}
	}
	return out
}

// neverSet reports whether stmt is a range over a struct field that no
// assignment or composite literal of the package gives a value.
func (c *classifier) neverSet(stmt ast.Node) bool {
	rs, ok := stmt.(*ast.RangeStmt)
	if !ok {
		return false
	}
	sel, ok := ast.Unparen(rs.X).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	field, ok := c.info.ObjectOf(sel.Sel).(*types.Var)
	if !ok || !field.IsField() || field.Exported() {
		return false
	}
	return len(c.idx[field]) == 0 && len(c.fieldValues(field)) == 0
}

func (c *classifier) usesRand(e ast.Expr) bool {
	for n := range ast.Preorder(e) {
		if call, ok := n.(*ast.CallExpr); ok && match.IsRand(match.Callee(c.info, call)) {
			return true
		}
	}
	return false
}

// periodic reports whether l is periodic work rather than a retry: an
// endless loop (a heartbeat, a keepalive, a poll) whose every wait runs
// on every round, at the top of its body before the attempt, whatever
// the last round gave, and whose failure path leaves the delay alone
// (for { timer.Reset(interval); <-timer.C; if err := c.ping(); err !=
// nil { failures++; continue }; interval = 5 * time.Second }). Its phase
// is set when the loop starts, not by a failure the clients share. A
// failure path that sets the delay (interval = time.Second; reconnect)
// makes it a retry schedule again, and so does a loop that drains a
// stream and waits only once the stream has closed (Loop.Drain).
func periodic(info *types.Info, l *loops.Loop) bool {
	if l.Shape != loops.For || !l.Endless || l.Via != nil || l.Drain != nil || len(l.Waits) == 0 {
		return false
	}
	top := func(n ast.Node) int {
		return slices.IndexFunc(l.Body.List, func(s ast.Stmt) bool { return s.Pos() <= n.Pos() && n.End() <= s.End() })
	}
	at := top(l.Call)
	if at < 0 {
		return false
	}
	var vars []types.Object
	for _, w := range l.Waits {
		i := top(w.Call)
		if w.Scope != nil || i < 0 || i >= at {
			return false
		}
		switch s := l.Body.List[i].(type) {
		case *ast.ExprStmt, *ast.AssignStmt:
			// timer.Reset(d); time.Sleep(d)
		case *ast.SelectStmt:
			// select { case <-ctx.Done(): return; case <-time.After(d): }
			if !slices.ContainsFunc(s.Body.List, func(c ast.Stmt) bool {
				comm := c.(*ast.CommClause).Comm
				return comm != nil && comm.Pos() <= w.Call.Pos() && w.Call.End() <= comm.End()
			}) {
				return false
			}
		default:
			return false
		}
		ast.Inspect(w.Delay, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if v, ok := info.ObjectOf(id).(*types.Var); ok {
					vars = append(vars, v)
				}
			}
			return true
		})
	}
	for _, s := range l.Between {
		if s.Pos() < l.Call.End() {
			continue // before the attempt
		}
		set := false
		ast.Inspect(s, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.AssignStmt:
				lhs = n.Lhs
			case *ast.IncDecStmt:
				lhs = []ast.Expr{n.X}
			}
			for _, e := range lhs {
				switch e := ast.Unparen(e).(type) {
				case *ast.Ident:
					set = set || slices.Contains(vars, info.ObjectOf(e))
				case *ast.SelectorExpr:
					set = set || slices.Contains(vars, info.ObjectOf(e.Sel)) // c.interval = d
				}
			}
			return !set
		})
		if set {
			return false
		}
	}
	return true
}
