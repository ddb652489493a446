// Package nojitter defines an Analyzer that reports retry loops whose
// wait between attempts is not random: a constant, a value fixed before
// the loop, or one that grows (exponentially or linearly) without jitter.
//
// Clients that failed together, because the dependency failed them
// together, wait the same delay and retry together: every retry is a
// new wall of load at the same instant. Random (full) jitter spreads
// them out. The fix is retry.Do with the default policy, whose schedule
// is capped exponential backoff with full jitter (backoff.Full).
//
// A delay the analyzer cannot follow (the result of a function call it
// does not know, such as a backoff library's NextBackOff) is assumed to
// be fine; so is any delay computed with math/rand, math/rand/v2 or
// crypto/rand. When one wait of a loop is random, the loop is not
// reported.
package nojitter

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"time"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/assign"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
	"github.com/unherd/unherd/unherdvet/internal/suppress"
)

// Analyzer reports retry loops that wait a constant or non-random delay.
var Analyzer = &analysis.Analyzer{
	Name:     "nojitter",
	Doc:      "report retry loops that wait a constant or non-random delay between attempts",
	Requires: []*analysis.Analyzer{loops.Analyzer, assign.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	r := suppress.New(pass)
	idx := pass.ResultOf[assign.Analyzer].(assign.Index)
	for _, l := range pass.ResultOf[loops.Analyzer].(*loops.Result).Loops {
		c := &classifier{info: pass.TypesInfo, idx: idx, loop: l, seen: make(map[types.Object]kind)}
		kinds := make([]kind, len(l.Waits))
		random := false
		for i, w := range l.Waits {
			kinds[i] = c.expr(w.Delay)
			random = random || kinds[i] == randomKind
		}
		if random {
			continue
		}
		for i, w := range l.Waits {
			if msg := message(pass, w, kinds[i]); msg != "" {
				r.Report(w.Call, msg)
			}
		}
	}
	return nil, nil
}

const fix = "clients that failed together retry in lockstep; use retry.Do with the default policy (capped exponential backoff with full jitter)"

func message(pass *analysis.Pass, w *loops.Wait, k kind) string {
	switch k {
	case constKind:
		if v := pass.TypesInfo.Types[w.Delay].Value; v != nil {
			if n, ok := constant.Int64Val(constant.ToInt(v)); ok {
				return fmt.Sprintf("retry loop waits a constant %v between attempts: %s", time.Duration(n), fix)
			}
		}
		return "retry loop waits a constant delay between attempts: " + fix
	case fixedKind:
		return fmt.Sprintf("retry loop waits the same delay (%s) between every attempt: %s", types.ExprString(w.Delay), fix)
	case growingKind:
		return "retry loop's delay grows without jitter: " + fix
	}
	return ""
}

// kind is what a delay expression is, from the least to the most
// variable; combining two takes the larger.
type kind int

const (
	constKind   kind = iota // a constant
	fixedKind               // the same value on every attempt
	growingKind             // grows with the attempt, without randomness
	unknownKind             // a call the analyzer does not follow
	randomKind              // drawn from a random source
)

type classifier struct {
	info *types.Info
	idx  assign.Index
	loop *loops.Loop
	// seen memoises variables; a variable being classified maps to
	// growingKind, so that d = d*2 reads as growth.
	seen map[types.Object]kind
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
			// A field written inside the loop is not followed.
			if len(c.idx.Within(sel.Obj(), c.loop.Stmt)) > 0 {
				return unknownKind
			}
			return max(fixedKind, c.expr(e.X))
		}
		return unknownKind
	case *ast.CallExpr:
		return c.call(e)
	}
	return unknownKind
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
	switch {
	case match.IsRand(fn):
		return randomKind
	case match.Func(fn, "math", "Pow", "Exp2", "Min", "Max", "Floor", "Ceil", "Round", "Trunc"):
		return c.args(e)
	case match.Method(fn, "time", "Duration", "Seconds", "Milliseconds", "Microseconds", "Nanoseconds", "Round", "Truncate"):
		return max(c.args(e), c.expr(e.Fun.(*ast.SelectorExpr).X))
	}
	return unknownKind
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
	inside := c.idx.Within(v, c.loop.Stmt)
	if len(inside) == 0 {
		// Loop-invariant: fixed, unless drawn at random before the loop.
		for _, a := range c.idx[v] {
			if a.Rhs != nil && c.usesRand(a.Rhs) {
				return randomKind
			}
		}
		return fixedKind
	}
	k := fixedKind
	for _, a := range inside {
		switch {
		case a.Op == token.RANGE || a.Op == token.INC || a.Op == token.DEC:
			k = max(k, growingKind) // a counter
		case a.Tuple || a.Rhs == nil:
			k = max(k, unknownKind)
		case a.Op == token.DEFINE || a.Op == token.ASSIGN || a.Op == token.VAR:
			rk := c.expr(a.Rhs)
			if rk <= fixedKind && c.refersTo(a.Rhs, v) {
				rk = growingKind
			}
			k = max(k, rk)
		default: // d *= 2, d += step, d <<= 1
			k = max(k, growingKind, c.expr(a.Rhs))
		}
	}
	return k
}

func (c *classifier) refersTo(e ast.Expr, v *types.Var) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && c.info.ObjectOf(id) == v {
			found = true
		}
		return !found
	})
	return found
}

func (c *classifier) usesRand(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && match.IsRand(match.Callee(c.info, call)) {
			found = true
		}
		return !found
	})
	return found
}
