// Package fix builds the text of suggested fixes: the file holding a
// node, an import a fix needs, the zero values a return must give, the
// statement list holding a statement.
package fix

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// File returns the file of pass that holds pos, or nil.
func File(pass *analysis.Pass, pos token.Pos) *ast.File {
	for _, f := range pass.Files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return nil
}

// Source formats n as gofmt would.
func Source(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := format.Node(&b, fset, n); err != nil {
		return types.ExprString(n.(ast.Expr))
	}
	return b.String()
}

// Import returns the name by which file refers to the package path, and
// the edits that import it when the file does not yet; ok is false when
// another import already takes the package's name.
func Import(file *ast.File, path, name string) (string, []analysis.TextEdit, bool) {
	for _, spec := range file.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		local := p[strings.LastIndex(p, "/")+1:]
		if spec.Name != nil {
			local = spec.Name.Name
		}
		if p == path {
			return local, nil, local != "_" && local != "."
		}
		if local == name {
			return "", nil, false
		}
	}
	quoted := strconv.Quote(path)
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		if g.Lparen.IsValid() {
			return name, []analysis.TextEdit{{Pos: g.Lparen + 1, End: g.Lparen + 1, NewText: []byte("\n\t" + quoted)}}, true
		}
		return name, []analysis.TextEdit{{Pos: g.End(), End: g.End(), NewText: []byte("\nimport " + quoted)}}, true
	}
	end := file.Name.End()
	return name, []analysis.TextEdit{{Pos: end, End: end, NewText: []byte("\n\nimport " + quoted)}}, true
}

// Return returns the text of a return statement that gives up with the
// error errExpr from a function of signature sig: zero values for the
// results before a last error result. ok is false when the last result
// is not an error (and sig has results), or a result has no simple zero
// value.
func Return(pkg *types.Package, sig *types.Signature, errExpr string) (string, bool) {
	res := sig.Results()
	if res.Len() == 0 {
		return "return", true
	}
	if !types.Identical(res.At(res.Len()-1).Type(), types.Universe.Lookup("error").Type()) {
		return "", false
	}
	var vals []string
	for i := range res.Len() - 1 {
		z, ok := zero(pkg, res.At(i).Type())
		if !ok {
			return "", false
		}
		vals = append(vals, z)
	}
	return "return " + strings.Join(append(vals, errExpr), ", "), true
}

func zero(pkg *types.Package, t types.Type) (string, bool) {
	switch u := t.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Map, *types.Chan, *types.Signature, *types.Interface:
		return "nil", true
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "false", true
		case u.Info()&types.IsString != 0:
			return `""`, true
		case u.Info()&types.IsNumeric != 0:
			return "0", true
		}
	case *types.Struct:
		if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() == pkg {
			return n.Obj().Name() + "{}", true
		}
	}
	return "", false
}

// Unused returns the first of names that no declaration visible at pos
// in pkg takes, or "" when all are taken.
func Unused(pkg *types.Package, pos token.Pos, names ...string) string {
	scope := pkg.Scope().Innermost(pos)
	for _, n := range names {
		if scope == nil {
			return n
		}
		if _, obj := scope.LookupParent(n, pos); obj == nil {
			return n
		}
	}
	return ""
}

// Indent returns the indentation of the line holding pos, "" when the
// file cannot be read.
func Indent(pass *analysis.Pass, pos token.Pos) string {
	p := pass.Fset.Position(pos)
	src, err := pass.ReadFile(p.Filename)
	if err != nil || p.Offset > len(src) {
		return ""
	}
	off := p.Offset
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	i := start
	for i < len(src) && (src[i] == '\t' || src[i] == ' ') {
		i++
	}
	return string(src[start:i])
}

// Lines joins lines, indenting all but the first with indent (the first
// takes the place of the replaced statement, which is indented already).
func Lines(indent string, lines ...string) string {
	return strings.Join(lines, "\n"+indent)
}
