package unherdvet

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// What loading runs, and what it does not. The go command is asked only
// to list the packages (go list -deps, without -export or -compiled), so
// it compiles nothing and runs no cgo, with CGO_ENABLED=0 in its
// environment so that files importing "C" are left out. Every file is
// then parsed and type-checked in this process, the dependencies with
// their function bodies skipped.

// listMode asks go list for names, files and the import graph only: no
// -export (which compiles the packages) and no -compiled (which runs cgo).
const listMode = packages.NeedName | packages.NeedFiles | packages.NeedImports |
	packages.NeedDeps | packages.NeedModule

// A group is the patterns that load together: those in one module, run
// from the module's root.
type group struct {
	dir      string   // where go list runs
	patterns []string // rewritten relative to dir when they are paths
	args     []string // the patterns as given, for messages
}

// groupPatterns sorts patterns into groups by the module that holds the
// directory each one names, so that a path loads with its own module's
// go.mod whatever the current directory. Patterns that are not paths
// (import paths such as example.com/x/... or std) load from dir.
// Groups keep the order of their first pattern.
func groupPatterns(dir string, patterns []string) []*group {
	base, err := filepath.Abs(dir)
	if err != nil {
		base = dir
	}
	var groups []*group
	byDir := map[string]*group{}
	add := func(d, pattern, arg string) {
		g := byDir[d]
		if g == nil {
			g = &group{dir: d}
			byDir[d] = g
			groups = append(groups, g)
		}
		g.patterns = append(g.patterns, pattern)
		g.args = append(g.args, arg)
	}
	for _, p := range patterns {
		if !isPathPattern(p) {
			add(base, p, p)
			continue
		}
		// Split "./a/b/..." into the directory ./a/b and the wildcard
		// tail "...", which may begin within an element ("./a/b...").
		head, tail := p, ""
		if i := strings.Index(p, "..."); i >= 0 {
			head, tail = p[:i], p[i:]
		}
		dirPart, partial := head, ""
		if tail != "" {
			if j := strings.LastIndexAny(head, `/`+string(filepath.Separator)); j >= 0 {
				dirPart, partial = head[:j], head[j+1:]
			} else {
				dirPart, partial = ".", head
			}
			if dirPart == "" {
				dirPart = "/"
			}
		} else if strings.HasSuffix(p, ".go") {
			// A list of files: go list takes them from their directory.
			dirPart, partial = filepath.Dir(p), filepath.Base(p)
		}
		abs := dirPart
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(base, abs)
		}
		root := moduleRoot(abs)
		if root == "" {
			add(base, p, p)
			continue
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			add(base, p, p)
			continue
		}
		np := "./" + filepath.ToSlash(rel)
		if rel == "." {
			np = "."
		}
		switch {
		case tail != "" && partial == "":
			np += "/" + tail
		case tail != "":
			np += "/" + partial + tail
		case partial != "":
			np += "/" + partial
		}
		add(root, np, p)
	}
	return groups
}

// isPathPattern reports whether go build would take pattern as a
// directory or file path rather than an import path.
func isPathPattern(p string) bool {
	return p == "." || p == ".." || filepath.IsAbs(p) ||
		strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") ||
		strings.HasPrefix(p, `.\`) || strings.HasPrefix(p, `..\`) ||
		strings.HasSuffix(p, ".go")
}

// moduleRoot returns the directory of the go.mod that governs dir: the
// nearest one in dir or above it, starting from the deepest directory
// that exists. It returns "" when there is none.
func moduleRoot(dir string) string {
	d := filepath.Clean(dir)
	for {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
	for {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// listEnv is the environment of go list: the caller's, with cgo off so
// that no C preprocessor or compiler runs on the code.
func listEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0")
}

// load lists the packages of g and type-checks them from source. It
// returns the root packages that loaded cleanly and a failure for each
// one that did not, or for the group when go list itself failed.
func load(ctx context.Context, fset *token.FileSet, g *group) ([]*packages.Package, []Failure, error) {
	cfg := &packages.Config{
		Context: ctx,
		Mode:    listMode,
		Dir:     g.dir,
		Env:     listEnv(),
		Fset:    fset,
	}
	roots, err := packages.Load(cfg, g.patterns...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, []Failure{{Package: strings.Join(g.args, " "), Errors: []string{err.Error()}}}, nil
	}
	if len(roots) == 0 {
		return nil, []Failure{{Package: strings.Join(g.args, " "), Errors: []string{"matched no packages"}}}, nil
	}
	tc := &typeChecker{ctx: ctx, fset: fset, state: map[*packages.Package]int{}}
	for _, p := range roots {
		p.Fset = fset
		tc.roots = append(tc.roots, p)
	}
	isRoot := map[*packages.Package]bool{}
	for _, p := range roots {
		isRoot[p] = true
	}
	tc.isRoot = isRoot
	var ok []*packages.Package
	var failed []Failure
	for _, p := range roots {
		tc.check(p)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if errs := packageErrors(p); len(errs) > 0 {
			failed = append(failed, Failure{Package: p.PkgPath, Errors: errs})
			continue
		}
		ok = append(ok, p)
	}
	return ok, failed, nil
}

// packageErrors lists the errors of p and of every package it imports,
// directly or not, without repeats: a root whose dependency did not load
// is not checked, since what it is missing could hide a finding.
func packageErrors(root *packages.Package) []string {
	var errs []string
	seen := map[string]bool{}
	packages.Visit([]*packages.Package{root}, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			s := e.Msg
			if e.Pos != "" {
				s = e.Pos + ": " + s
			}
			if !seen[s] {
				seen[s] = true
				errs = append(errs, s)
			}
		}
	})
	return errs
}

// typeChecker parses and type-checks listed packages in dependency order.
// Dependencies are checked without their function bodies and keep no
// syntax; roots are checked in full, as the analyzers need them.
type typeChecker struct {
	ctx    context.Context
	fset   *token.FileSet
	roots  []*packages.Package
	isRoot map[*packages.Package]bool
	// state is 1 while a package is being checked, 2 once it is done.
	state map[*packages.Package]int
}

// check type-checks p after its imports. Errors go to p.Errors.
func (tc *typeChecker) check(p *packages.Package) {
	switch tc.state[p] {
	case 1, 2:
		return
	}
	tc.state[p] = 1
	defer func() { tc.state[p] = 2 }()
	paths := make([]string, 0, len(p.Imports))
	for path := range p.Imports {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		tc.check(p.Imports[path])
	}
	if tc.ctx.Err() != nil {
		return
	}
	root := tc.isRoot[p]
	p.Fset = tc.fset
	p.TypesSizes = sizes()
	if p.PkgPath == "unsafe" {
		p.Types = types.Unsafe
		return
	}
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parseFile(tc.fset, name, root)
		if err != nil {
			p.Errors = append(p.Errors, asPackageErrors(err)...)
		}
		if f != nil {
			files = append(files, f)
		}
	}
	var info *types.Info
	if root {
		info = &types.Info{
			Types:        map[ast.Expr]types.TypeAndValue{},
			Defs:         map[*ast.Ident]types.Object{},
			Uses:         map[*ast.Ident]types.Object{},
			Implicits:    map[ast.Node]types.Object{},
			Instances:    map[*ast.Ident]types.Instance{},
			Scopes:       map[ast.Node]*types.Scope{},
			Selections:   map[*ast.SelectorExpr]*types.Selection{},
			FileVersions: map[*ast.File]string{},
		}
	}
	conf := &types.Config{
		Importer:         importer(func(path string) (*types.Package, error) { return tc.imported(p, path) }),
		Sizes:            p.TypesSizes,
		IgnoreFuncBodies: !root,
		Error: func(err error) {
			p.Errors = append(p.Errors, asPackageError(err))
			if te, ok := err.(types.Error); ok {
				p.TypeErrors = append(p.TypeErrors, te)
			}
		},
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		conf.GoVersion = "go" + p.Module.GoVersion
	}
	pkg, _ := conf.Check(p.PkgPath, tc.fset, files, info)
	if pkg == nil {
		pkg = types.NewPackage(p.PkgPath, p.Name)
	}
	p.Types = pkg
	p.IllTyped = len(p.Errors) > 0
	if root {
		p.Syntax, p.TypesInfo = files, info
	}
}

// imported returns the checked package that from imports as path.
func (tc *typeChecker) imported(from *packages.Package, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	ip := from.Imports[path]
	if ip == nil {
		return nil, fmt.Errorf("no package listed for import %q", path)
	}
	if tc.state[ip] != 2 || ip.Types == nil {
		return nil, fmt.Errorf("import cycle or unchecked package %q", path)
	}
	return ip.Types, nil
}

type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }

// sizes returns the sizes of the gc compiler on the target architecture.
func sizes() types.Sizes {
	arch := os.Getenv("GOARCH")
	if arch == "" {
		arch = runtime.GOARCH
	}
	if s := types.SizesFor("gc", arch); s != nil {
		return s
	}
	return types.SizesFor("gc", "amd64")
}

// parseFile parses one file. A root's file keeps its comments, for the
// suppression comments, and is refused when its statements nest deeper
// than MaxNesting; a dependency's keeps only its declarations.
func parseFile(fset *token.FileSet, name string, root bool) (*ast.File, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if !root {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if f != nil {
			for _, d := range f.Decls {
				// An empty body, not none: the type checker, told
				// to ignore bodies, still wants generic functions
				// and init to have one.
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					fd.Body = &ast.BlockStmt{Lbrace: fd.Body.Lbrace, Rbrace: fd.Body.Rbrace}
				}
			}
		}
		return f, err
	}
	f, err := parser.ParseFile(fset, name, src, parser.AllErrors|parser.ParseComments)
	if err != nil || f == nil {
		return f, err
	}
	if pos, ok := tooDeep(f, MaxNesting); !ok {
		// Keep the package clause only, so that nothing else of the
		// file is type-checked or analysed.
		stub := &ast.File{Package: f.Package, Name: f.Name, FileStart: f.FileStart, FileEnd: f.FileEnd}
		return stub, &nestingError{pos: fset.Position(pos)}
	}
	return f, nil
}

// asPackageErrors converts a parse, type or nesting error into the
// packages.Errors that go/packages would report.
func asPackageErrors(err error) []packages.Error {
	var list scanner.ErrorList
	if errors.As(err, &list) {
		var out []packages.Error
		for _, e := range list {
			out = append(out, packages.Error{Pos: e.Pos.String(), Msg: e.Msg, Kind: packages.ParseError})
		}
		return out
	}
	return []packages.Error{asPackageError(err)}
}

// asPackageError converts a type or nesting error, or any other, into a
// packages.Error.
func asPackageError(err error) packages.Error {
	var te types.Error
	if errors.As(err, &te) {
		return packages.Error{Pos: te.Fset.Position(te.Pos).String(), Msg: te.Msg, Kind: packages.TypeError}
	}
	var ne *nestingError
	if errors.As(err, &ne) {
		return packages.Error{Pos: ne.pos.String(), Msg: ne.msg(), Kind: packages.ParseError}
	}
	return packages.Error{Msg: err.Error(), Kind: packages.ParseError}
}
