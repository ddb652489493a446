package unherdvet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/token"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/unherd/unherd/unherdvet/handlerretry"
	"github.com/unherd/unherd/unherdvet/idempotency"
	"github.com/unherd/unherd/unherdvet/misuse"
	"github.com/unherd/unherd/unherdvet/nodelay"
	"github.com/unherd/unherd/unherdvet/nojitter"
	"github.com/unherd/unherd/unherdvet/notimeout"
	"github.com/unherd/unherd/unherdvet/sleepctx"
	"github.com/unherd/unherd/unherdvet/unbounded"
)

// Analyzers returns the checks, in the order of the package doc.
func Analyzers() []*analysis.Analyzer {
	return []*analysis.Analyzer{
		nojitter.Analyzer,
		nodelay.Analyzer,
		unbounded.Analyzer,
		sleepctx.Analyzer,
		notimeout.Analyzer,
		idempotency.Analyzer,
		handlerretry.Analyzer,
		misuse.Analyzer,
	}
}

// ErrLoad is wrapped by the error Check returns when a package cannot be
// loaded, does not type-check or nests too deeply to be checked.
var ErrLoad = errors.New("unherdvet: cannot load packages")

// A Finding is one diagnostic.
type Finding struct {
	// File is the file's path, relative to the directory Check ran in
	// when it lies below it.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Check is the analyzer's name, as a suppression comment takes it.
	Check string `json:"check"`
	// Message says what is wrong and what to use instead.
	Message string `json:"message"`
	// Fix holds the edits of the finding's suggested fix, when the
	// rewrite is mechanical (ApplyFixes applies them); nil otherwise.
	Fix []Edit `json:"-"`
}

// An Edit replaces the bytes [Start, End) of File with New.
type Edit struct {
	// File is the file's absolute path.
	File       string
	Start, End int
	New        string
}

// String formats f as file:line: check: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Check, f.Message)
}

// A Failure is a package, or a group of patterns, that could not be
// checked: go list failed, a file does not parse or type-check (in the
// package or in one it imports), a file nests deeper than MaxNesting, or
// a check failed on it.
type Failure struct {
	// Package is the package's import path, or the patterns as given
	// when go list failed for all of them or they matched nothing.
	Package string `json:"package"`
	// Errors are the messages, file:line: first where there is a place.
	Errors []string `json:"errors"`
}

// String formats f as the package and its errors, one per line, at most
// ten.
func (f Failure) String() string {
	errs := f.Errors
	if len(errs) > 10 {
		errs = append(errs[:10:10], fmt.Sprintf("and %d more", len(f.Errors)-10))
	}
	return fmt.Sprintf("%s:\n\t%s", f.Package, strings.Join(errs, "\n\t"))
}

// A Result is what Run found.
type Result struct {
	// Findings are sorted by file, line, column and check.
	Findings []Finding
	// Failures are the packages that were not checked, in the order of
	// the patterns. A Result with failures is incomplete: the packages
	// it lists may hold findings too.
	Failures []Failure
}

// Check loads the packages that patterns name (as go build takes them),
// relative to dir ("" means the current directory), runs every check over
// them and returns the findings sorted by file and line. It is Run
// without a context, and returns an error wrapping ErrLoad, and no
// findings, when any package could not be checked.
func Check(dir string, patterns ...string) ([]Finding, error) {
	res, err := Run(context.Background(), dir, patterns...)
	if err != nil {
		return nil, err
	}
	if len(res.Failures) > 0 {
		var msgs []string
		for _, f := range res.Failures {
			msgs = append(msgs, f.String())
		}
		return nil, fmt.Errorf("%w: %s", ErrLoad, strings.Join(msgs, "\n"))
	}
	return res.Findings, nil
}

// Run loads the packages that patterns name (as go build takes them),
// runs every check over them and returns the findings and the packages
// it could not check. A pattern that names a directory or file (., ..,
// or starting with ./, ../ or /; relative to dir, "" meaning the current
// directory) loads in the module whose go.mod governs that directory,
// wherever dir is; other patterns (import paths, std, all) load in dir.
//
// What runs on the code: go list, to find the packages and their
// imports, with CGO_ENABLED=0 and without -export or -compiled, so that
// no compiler, C preprocessor or cgo runs; then the parser and the type
// checker of the standard library, in this process, on every package
// and its dependencies (these without their function bodies). go list
// may still download the modules that go.mod requires, as go build
// would. A file whose blocks nest deeper than MaxNesting is refused.
//
// A package that fails to load is a Failure and the others are still
// checked. The error is ctx's when ctx is done first: go list is then
// interrupted (and killed 5 seconds later if it has not stopped), type
// checking stops at the next package, and Run returns once go list has
// exited, or after CancelGrace at most, leaving the check of the
// package under way to finish in the background.
func Run(ctx context.Context, dir string, patterns ...string) (*Result, error) {
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := run(ctx, dir, patterns)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
	}
	grace := time.NewTimer(CancelGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	}
	return nil, ctx.Err()
}

// CancelGrace is how long Run waits, once its context is done, for go
// list to stop (go/packages interrupts it, then kills it after 5
// seconds) and the loading to wind down, so that a command that exits
// when Run returns leaves no go list behind.
const CancelGrace = 10 * time.Second

func run(ctx context.Context, dir string, patterns []string) (*Result, error) {
	res := &Result{}
	base, _ := filepath.Abs(dir)
	for _, g := range groupPatterns(dir, patterns) {
		fset := token.NewFileSet()
		pkgs, failed, err := load(ctx, fset, g)
		if err != nil {
			return nil, err
		}
		res.Failures = append(res.Failures, failed...)
		if len(pkgs) == 0 {
			continue
		}
		findings, failed := analyze(pkgs, base)
		res.Findings = append(res.Findings, findings...)
		res.Failures = append(res.Failures, failed...)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	sort.Slice(res.Findings, func(i, j int) bool {
		a, b := res.Findings[i], res.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Check < b.Check
	})
	return res, nil
}

// analyze runs the checks over pkgs and returns their findings, with file
// names relative to base when they lie below it, and a failure for each
// package a check failed on.
func analyze(pkgs []*packages.Package, base string) ([]Finding, []Failure) {
	g, err := checker.Analyze(Analyzers(), pkgs, nil)
	if err != nil {
		var names []string
		for _, p := range pkgs {
			names = append(names, p.PkgPath)
		}
		return nil, []Failure{{Package: strings.Join(names, " "), Errors: []string{err.Error()}}}
	}
	var out []Finding
	var failed []Failure
	bad := map[string]int{}
	for act := range g.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			path := act.Package.PkgPath
			i, ok := bad[path]
			if !ok {
				i = len(failed)
				bad[path] = i
				failed = append(failed, Failure{Package: path})
			}
			failed[i].Errors = append(failed[i].Errors, fmt.Sprintf("%s: %v", act.Analyzer.Name, act.Err))
			continue
		}
		fset := act.Package.Fset
		for _, d := range act.Diagnostics {
			pos := fset.Position(d.Pos)
			file := pos.Filename
			if rel, err := filepath.Rel(base, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
			out = append(out, Finding{
				File: file, Line: pos.Line, Column: pos.Column,
				Check:   act.Analyzer.Name,
				Message: strings.TrimPrefix(d.Message, act.Analyzer.Name+": "),
				Fix:     edits(fset, d),
			})
		}
	}
	return out, failed
}

// edits returns the edits of a diagnostic's first suggested fix.
func edits(fset *token.FileSet, d analysis.Diagnostic) []Edit {
	if len(d.SuggestedFixes) == 0 {
		return nil
	}
	var out []Edit
	for _, te := range d.SuggestedFixes[0].TextEdits {
		start := fset.Position(te.Pos)
		end := start
		if te.End.IsValid() {
			end = fset.Position(te.End)
		}
		out = append(out, Edit{File: start.Filename, Start: start.Offset, End: end.Offset, New: string(te.NewText)})
	}
	return out
}

// WriteText writes one line per finding: file:line: check: message.
func WriteText(w io.Writer, findings []Finding) error {
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the findings as one JSON array (empty, not null, when
// there are none).
func WriteJSON(w io.Writer, findings []Finding) error {
	if findings == nil {
		findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(findings)
}
