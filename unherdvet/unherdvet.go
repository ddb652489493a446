package unherdvet

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/token"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/unherd/unherd/unherdvet/handlerretry"
	"github.com/unherd/unherd/unherdvet/idempotency"
	"github.com/unherd/unherd/unherdvet/misuse"
	"github.com/unherd/unherd/unherdvet/nojitter"
	"github.com/unherd/unherd/unherdvet/notimeout"
	"github.com/unherd/unherd/unherdvet/sleepctx"
	"github.com/unherd/unherd/unherdvet/unbounded"
)

// Analyzers returns the checks, in the order of the package doc.
func Analyzers() []*analysis.Analyzer {
	return []*analysis.Analyzer{
		nojitter.Analyzer,
		unbounded.Analyzer,
		sleepctx.Analyzer,
		notimeout.Analyzer,
		idempotency.Analyzer,
		handlerretry.Analyzer,
		misuse.Analyzer,
	}
}

// ErrLoad is wrapped by the error Check returns when the packages cannot
// be loaded or do not type-check.
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
}

// String formats f as file:line: check: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Check, f.Message)
}

// Check loads the packages that patterns name (as go build takes them),
// relative to dir ("" means the current directory), runs every check over
// them and returns the findings sorted by file and line.
func Check(dir string, patterns ...string) ([]Finding, error) {
	cfg := &packages.Config{Mode: packages.LoadSyntax, Dir: dir}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		if len(errs) > 10 {
			errs = append(errs[:10], fmt.Sprintf("and %d more", len(errs)-10))
		}
		return nil, fmt.Errorf("%w:\n\t%s", ErrLoad, strings.Join(errs, "\n\t"))
	}
	g, err := checker.Analyze(Analyzers(), pkgs, nil)
	if err != nil {
		return nil, fmt.Errorf("unherdvet: %w", err)
	}
	base, _ := filepath.Abs(dir)
	var out []Finding
	var fset *token.FileSet
	for act := range g.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			return nil, fmt.Errorf("unherdvet: %s on %s: %w", act.Analyzer.Name, act.Package.PkgPath, act.Err)
		}
		fset = act.Package.Fset
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
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
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
	return out, nil
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
