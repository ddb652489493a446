// Package sleepctx defines an Analyzer that reports waits in a retry loop
// that ignore the context in scope: time.Sleep, or a bare <-time.After,
// where a context.Context (or an *http.Request, which carries one) is at
// hand. A context made inside the loop, for one attempt, does not count.
//
// When the caller gives up (its deadline passes, its client disconnects)
// the loop sleeps on and retries anyway, doing work nobody waits for. Wait
// in a select that also receives from ctx.Done(), or use retry.Do(ctx,
// ...), which stops waiting when the context is done and never starts a
// wait that would end after its deadline.
package sleepctx

import (
	"fmt"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
	"github.com/unherd/unherd/unherdvet/internal/suppress"
)

// Analyzer reports time.Sleep in a retry loop where a context is in scope.
var Analyzer = &analysis.Analyzer{
	Name:     "sleepctx",
	Doc:      "report waits in retry loops that ignore the context in scope",
	Requires: []*analysis.Analyzer{loops.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	r := suppress.New(pass)
	for _, l := range pass.ResultOf[loops.Analyzer].(*loops.Result).Loops {
		for _, w := range l.Waits {
			if w.Kind != loops.Sleep && w.Kind != loops.After {
				continue
			}
			// A context made inside the loop bounds one attempt, not the wait.
			ctx := match.ContextInScope(pass.Pkg, w.Call.Pos(), l.Stmt.Pos())
			if ctx == nil {
				continue
			}
			what := "time.Sleep"
			if w.Kind == loops.After {
				what = "<-time.After"
			}
			name := ctx.Name()
			if !match.IsContext(ctx.Type()) {
				name += ".Context()"
			}
			r.Report(w.Call, fmt.Sprintf("retry loop waits with %s although %s is in scope: when the caller gives up, the loop sleeps on and retries anyway; use retry.Do(%s, ...), which stops when the context is done and never waits past its deadline, or select on %s.Done()", what, name, name, name))
		}
	}
	return nil, nil
}
