// Package suppress reports diagnostics unless a comment silences them.
//
// A finding is silenced by a line comment at the end of its line, or on
// the line just above it:
//
//	//unherdvet:ignore nojitter,unbounded reason why this loop is fine
//
// The comment names the checks it silences, separated by commas, and
// should say why; a comment naming no check silences nothing.
package suppress

import (
	"go/ast"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Directive starts a suppression comment.
const Directive = "//unherdvet:ignore"

// Reporter reports the diagnostics of one pass, dropping those a
// suppression comment silences. Each message is prefixed with the check's
// name, so that go vet's output names the check to silence.
type Reporter struct {
	pass *analysis.Pass
	// lines maps a file name and line to the checks silenced there.
	lines map[string]map[int][]string
}

// New returns a Reporter for pass.
func New(pass *analysis.Pass) *Reporter {
	r := &Reporter{pass: pass, lines: make(map[string]map[int][]string)}
	for _, f := range pass.Files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				checks, ok := Parse(c.Text)
				if !ok {
					continue
				}
				pos := pass.Fset.Position(c.Slash)
				m := r.lines[pos.Filename]
				if m == nil {
					m = make(map[int][]string)
					r.lines[pos.Filename] = m
				}
				// Its own line, for a comment at the end of the line, and the
				// next, for a comment on the line above.
				m[pos.Line] = append(m[pos.Line], checks...)
				m[pos.Line+1] = append(m[pos.Line+1], checks...)
			}
		}
	}
	return r
}

// Parse returns the checks a comment silences, and whether it is a
// suppression comment at all.
func Parse(text string) (checks []string, ok bool) {
	rest, ok := strings.CutPrefix(text, Directive)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return nil, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, true
	}
	for _, c := range strings.Split(fields[0], ",") {
		if c != "" {
			checks = append(checks, c)
		}
	}
	return checks, true
}

// Report reports msg at n unless a comment silences the pass's check on
// n's line.
func (r *Reporter) Report(n ast.Node, msg string) {
	r.ReportFix(n, msg)
}

// ReportFix is Report with suggested fixes, which editors and unherd vet
// -fix apply.
func (r *Reporter) ReportFix(n ast.Node, msg string, fixes ...analysis.SuggestedFix) {
	name := r.pass.Analyzer.Name
	pos := r.pass.Fset.Position(n.Pos())
	for _, c := range r.lines[pos.Filename][pos.Line] {
		if c == name {
			return
		}
	}
	r.pass.Report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: name, Message: name + ": " + msg, SuggestedFixes: fixes})
}
