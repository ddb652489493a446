// Package assign indexes every assignment in a package by the variable
// (or struct field) it writes, so that a check can ask where a delay, a
// request or a client got its value.
package assign

import (
	"go/ast"
	"go/token"
	"go/types"
	"reflect"

	"golang.org/x/tools/go/analysis"
)

// An Assign is one write to a variable or field.
type Assign struct {
	// Lhs is the expression written: an identifier or a selector.
	Lhs ast.Expr
	// Rhs is the value: nil for x++ and x--, a range clause and a
	// declaration without value; the whole call when the call returns
	// several values (Index then says which).
	Rhs ast.Expr
	// Index is the position of Lhs among the left-hand sides.
	Index int
	// Tuple says that Rhs returns several values, of which Lhs takes the
	// Index-th.
	Tuple bool
	// Op is the assignment's token: token.DEFINE, token.ASSIGN, an
	// operator assignment such as token.MUL_ASSIGN, token.INC, token.DEC,
	// token.RANGE, or token.VAR for a var declaration.
	Op token.Token
	// Stmt is the statement or declaration holding it.
	Stmt ast.Node
}

// Index maps each variable or field object to its writes, in source
// order.
type Index map[types.Object][]Assign

// Analyzer builds the Index of a package. It reports nothing.
var Analyzer = &analysis.Analyzer{
	Name:       "assigns",
	Doc:        "index of assignments by the variable or field they write",
	Run:        run,
	ResultType: reflect.TypeFor[Index](),
}

func run(pass *analysis.Pass) (any, error) {
	idx := make(Index)
	info := pass.TypesInfo
	add := func(lhs, rhs ast.Expr, i int, tuple bool, op token.Token, stmt ast.Node) {
		if obj := Target(info, lhs); obj != nil {
			idx[obj] = append(idx[obj], Assign{Lhs: lhs, Rhs: rhs, Index: i, Tuple: tuple, Op: op, Stmt: stmt})
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				tuple := len(n.Rhs) == 1 && len(n.Lhs) > 1
				for i, lhs := range n.Lhs {
					rhs := n.Rhs[0]
					if !tuple && i < len(n.Rhs) {
						rhs = n.Rhs[i]
					}
					add(lhs, rhs, i, tuple, n.Tok, n)
				}
			case *ast.IncDecStmt:
				add(n.X, nil, 0, false, n.Tok, n)
			case *ast.RangeStmt:
				if n.Key != nil {
					add(n.Key, nil, 0, false, token.RANGE, n)
				}
				if n.Value != nil {
					add(n.Value, nil, 1, false, token.RANGE, n)
				}
			case *ast.ValueSpec:
				tuple := len(n.Values) == 1 && len(n.Names) > 1
				for i, name := range n.Names {
					var rhs ast.Expr
					switch {
					case tuple:
						rhs = n.Values[0]
					case i < len(n.Values):
						rhs = n.Values[i]
					}
					add(name, rhs, i, tuple, token.VAR, n)
				}
			}
			return true
		})
	}
	return idx, nil
}

// Target returns the variable or field that an assignment to lhs
// writes, or nil (for _, an index expression or a dereference).
func Target(info *types.Info, lhs ast.Expr) types.Object {
	switch lhs := ast.Unparen(lhs).(type) {
	case *ast.Ident:
		if lhs.Name == "_" {
			return nil
		}
		if obj, ok := info.ObjectOf(lhs).(*types.Var); ok {
			return obj
		}
	case *ast.SelectorExpr:
		if obj, ok := info.ObjectOf(lhs.Sel).(*types.Var); ok {
			return obj
		}
	}
	return nil
}

// Within returns the writes of obj whose position lies in n.
func (idx Index) Within(obj types.Object, n ast.Node) []Assign {
	var out []Assign
	for _, a := range idx[obj] {
		if a.Stmt.Pos() >= n.Pos() && a.Stmt.End() <= n.End() {
			out = append(out, a)
		}
	}
	return out
}
