package loops

import (
	"go/ast"
	"go/types"

	"github.com/unherd/unherd/unherdvet/internal/match"
)

// resubscribe matches an endless loop that drains a channel another
// service feeds (a watch, a subscription) and, when the channel closes,
// waits and asks for a new one. The attempt is the call that returns the
// channel; its failure is the channel's closing, which carries no error;
// what runs after the drain runs between attempts.
//
//	ch := c.Watch(ctx, key)
//	for {
//		for ev := range ch {
//			apply(ev)
//		}
//		time.Sleep(time.Second)
//		ch = c.Watch(ctx, key)
//	}
//
// The call may also open the body (for { ch := c.Watch(ctx, key); for
// ev := range ch { ... }; time.Sleep(d) }). Only a loop that waits
// between the drain and the next call matches: one that asks again at
// once is more often a consumer moving to its next batch.
func (f *finder) resubscribe(l *Loop) bool {
	fs, ok := l.Stmt.(*ast.ForStmt)
	if !ok || fs.Init != nil || fs.Cond != nil || fs.Post != nil {
		return false
	}
	for i, s := range l.Body.List {
		rs, ok := s.(*ast.RangeStmt)
		if !ok {
			continue
		}
		ch := f.chanObj(rs.X)
		if ch == nil {
			continue
		}
		before, rest := l.Body.List[:i], l.Body.List[i+1:]
		call := f.feeds(ch, rest)
		if call == nil {
			call = f.feeds(ch, before)
		}
		if call == nil || !match.Streams(f.info, f.bodies, call, 2) || f.anyTop(l, rest, leave) {
			continue
		}
		between := append(append([]ast.Stmt(nil), rest...), before...)
		if len(f.waits(&Loop{Func: l.Func, Between: between})) == 0 {
			continue
		}
		l.Call, l.Branch, l.Endless, l.Drain = call, call, true, rs
		l.Results = []types.Object{ch}
		l.Between = between
		return true
	}
	return false
}

// feeds returns the call that stmts, outside function literals, assign
// to the channel variable ch (ch = c.Watch(ctx, key), ch := ...), or nil.
func (f *finder) feeds(ch types.Object, stmts []ast.Stmt) *ast.CallExpr {
	var found *ast.CallExpr
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			if _, lit := n.(*ast.FuncLit); lit || found != nil {
				return false
			}
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				return true
			}
			call, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := ast.Unparen(as.Lhs[0]).(*ast.Ident); ok && f.info.ObjectOf(id) == ch {
				found = call
			}
			return found == nil
		})
	}
	return found
}
