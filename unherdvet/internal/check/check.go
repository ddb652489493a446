// Package check builds the analyzers of unherdvet around one skeleton:
// visit each retry loop (or each file) outside test files and generated
// code, and report through a suppress.Reporter, so that every check is
// silenced the same way.
package check

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"

	"github.com/unherd/unherd/unherdvet/internal/assign"
	"github.com/unherd/unherd/unherdvet/internal/loops"
	"github.com/unherd/unherd/unherdvet/internal/match"
	"github.com/unherd/unherd/unherdvet/internal/suppress"
)

// Pass is one run of a check over a package: the analysis pass, with
// reports that a suppression comment can silence and the indexes the
// checks share.
type Pass struct {
	*analysis.Pass
	r *suppress.Reporter
	// Assign indexes the package's assignments by what they write.
	Assign assign.Index
	bodies map[*types.Func]*ast.BlockStmt
}

// Report reports msg at n unless a suppression comment silences the
// check on n's line.
func (p *Pass) Report(n ast.Node, msg string) { p.r.Report(n, msg) }

// ReportFix is Report with suggested fixes.
func (p *Pass) ReportFix(n ast.Node, msg string, fixes ...analysis.SuggestedFix) {
	p.r.ReportFix(n, msg, fixes...)
}

// Bodies returns the package's function bodies by function (see
// match.Bodies), made on the first call.
func (p *Pass) Bodies() map[*types.Func]*ast.BlockStmt {
	if p.bodies == nil {
		p.bodies = match.Bodies(p.TypesInfo, p.Files)
	}
	return p.bodies
}

func newPass(pass *analysis.Pass) *Pass {
	return &Pass{Pass: pass, r: suppress.New(pass), Assign: pass.ResultOf[assign.Analyzer].(assign.Index)}
}

// Loops returns an Analyzer named name, with the doc line doc, that calls
// each for every retry loop of the package (loops.Analyzer's, in source
// order, outside test files and generated code).
func Loops(name, doc string, each func(p *Pass, l *loops.Loop)) *analysis.Analyzer {
	return &analysis.Analyzer{
		Name:     name,
		Doc:      doc,
		Requires: []*analysis.Analyzer{loops.Analyzer, assign.Analyzer},
		Run: func(pass *analysis.Pass) (any, error) {
			p := newPass(pass)
			for _, l := range pass.ResultOf[loops.Analyzer].(*loops.Result).Loops {
				each(p, l)
			}
			return nil, nil
		},
	}
}

// Files returns an Analyzer named name, with the doc line doc, that calls
// each for every file of the package but test files and generated code.
func Files(name, doc string, each func(p *Pass, f *ast.File)) *analysis.Analyzer {
	return &analysis.Analyzer{
		Name:     name,
		Doc:      doc,
		Requires: []*analysis.Analyzer{assign.Analyzer},
		Run: func(pass *analysis.Pass) (any, error) {
			p := newPass(pass)
			for _, f := range pass.Files {
				if !match.Skip(pass, f) {
					each(p, f)
				}
			}
			return nil, nil
		},
	}
}
