package match

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAny(t *testing.T) {
	funcLit := func(n ast.Node) bool {
		_, ok := n.(*ast.FuncLit)
		return ok
	}
	never := func(ast.Node) bool { return false }
	returns := func(n ast.Node) bool {
		_, ok := n.(*ast.ReturnStmt)
		return ok
	}
	tests := []struct {
		name       string
		src        string
		skip, pred func(ast.Node) bool
		want       bool
		asked      []string // the types of the nodes pred is asked about, in order
	}{
		{
			name: "stops at the first hit",
			src:  "package p; func f() { return; return }",
			skip: funcLit, pred: returns,
			want:  true,
			asked: []string{"*ast.File", "*ast.Ident", "*ast.FuncDecl", "*ast.Ident", "*ast.FuncType", "*ast.FieldList", "*ast.BlockStmt", "*ast.ReturnStmt"},
		},
		{
			name: "skipped node asked about, nothing below it",
			src:  "package p; var v = func() { return }",
			skip: funcLit, pred: returns,
			want:  false,
			asked: []string{"*ast.File", "*ast.Ident", "*ast.GenDecl", "*ast.ValueSpec", "*ast.Ident", "*ast.FuncLit"},
		},
		{
			name: "below a node that is not skipped",
			src:  "package p; var v = func() { return }",
			skip: never, pred: returns,
			want:  true,
			asked: []string{"*ast.File", "*ast.Ident", "*ast.GenDecl", "*ast.ValueSpec", "*ast.Ident", "*ast.FuncLit", "*ast.FuncType", "*ast.FieldList", "*ast.BlockStmt", "*ast.ReturnStmt"},
		},
		{
			name: "a skipped node pred holds for",
			src:  "package p; var v = func() { return }",
			skip: funcLit, pred: funcLit,
			want:  true,
			asked: []string{"*ast.File", "*ast.Ident", "*ast.GenDecl", "*ast.ValueSpec", "*ast.Ident", "*ast.FuncLit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			var asked []string
			got := Any(f, tt.skip, func(n ast.Node) bool {
				asked = append(asked, fmt.Sprintf("%T", n))
				return tt.pred(n)
			})
			if got != tt.want {
				t.Errorf("Any = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(tt.asked, asked); diff != "" {
				t.Errorf("nodes asked about (-want +got):\n%s", diff)
			}
		})
	}
}
