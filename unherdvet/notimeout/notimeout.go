package notimeout

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/astutil"

	"github.com/unherd/unherd/unherdvet/internal/assign"
	"github.com/unherd/unherd/unherdvet/internal/check"
	"github.com/unherd/unherd/unherdvet/internal/fix"
	"github.com/unherd/unherd/unherdvet/internal/match"
)

const advice = "use an http.Client with Timeout set, or http.NewRequestWithContext with a context deadline (with unherdhttp.Transport, Config.AttemptTimeout bounds each attempt)"

// reportNoTimeout reports the HTTP calls of f that have no timeout.
func reportNoTimeout(p *check.Pass, f *ast.File) {
	c := &checker{info: p.TypesInfo, idx: p.Assign}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		h := match.HTTP(c.info, call)
		if h == nil || h.Func.Name() == "RoundTrip" {
			return true
		}
		name := "http." + h.Func.Name()
		switch {
		case h.Client == nil:
			p.ReportFix(call, fmt.Sprintf("%s uses http.DefaultClient, which has no timeout, and takes no context: a server that stops answering holds this call for ever; %s", name, advice),
				requestFix(p.Pass, f, call, h)...)
		case match.IsDefaultClient(c.info, h.Client):
			if h.Req == nil || c.noContext(h.Req) {
				p.Report(call, fmt.Sprintf("http.DefaultClient.%s has no timeout: a server that stops answering holds this call for ever; %s", h.Func.Name(), advice))
			}
		case c.noTimeout(h.Client):
			if h.Req == nil || c.noContext(h.Req) {
				what := "takes no context"
				if h.Req != nil {
					what = "its request, from http.NewRequest, has no context"
				}
				p.Report(call, fmt.Sprintf("%s on an http.Client without Timeout, and %s: a server that stops answering holds this call for ever; %s", types.ExprString(h.Client)+"."+h.Func.Name(), what, advice))
			}
		}
		return true
	})
}

// requestFix rewrites resp, err := http.Get(url) (or Head, or Post),
// standing alone as a statement where a context is in scope, to a
// request with that context sent by a client with a timeout:
//
//	var req *http.Request
//	req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
//	if err == nil {
//		resp, err = (&http.Client{Timeout: 30 * time.Second}).Do(req)
//	}
//
// declaring resp and err first when the statement did.
func requestFix(pass *analysis.Pass, file *ast.File, call *ast.CallExpr, h *match.HTTPCall) []analysis.SuggestedFix {
	methods := map[string]string{"Get": "MethodGet", "Head": "MethodHead", "Post": "MethodPost"}
	method, ok := methods[h.Func.Name()]
	sel, ok2 := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || !ok2 {
		return nil
	}
	pkgID, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil
	}
	http := pkgID.Name
	stmt := assignOf(file, call)
	if stmt == nil {
		return nil
	}
	resp, ok := stmt.Lhs[0].(*ast.Ident)
	errID, ok2 := stmt.Lhs[1].(*ast.Ident)
	if !ok || !ok2 || errID.Name == "_" {
		return nil
	}
	ctxObj := match.ContextInScope(pass.Pkg, call.Pos(), stmt.Pos())
	if ctxObj == nil {
		return nil
	}
	ctx := ctxObj.Name()
	if !match.IsContext(ctxObj.Type()) {
		ctx += ".Context()"
	}
	timeName, edits, ok := fix.Import(file, "time", "time")
	req := fix.Unused(pass.Pkg, stmt.Pos(), "req", "httpReq", "retryReq")
	if !ok || req == "" {
		return nil
	}
	var lines []string
	if stmt.Tok == token.DEFINE {
		for _, d := range []struct {
			id  *ast.Ident
			typ string
		}{{resp, "*" + http + ".Response"}, {errID, "error"}} {
			if d.id.Name != "_" && pass.TypesInfo.Defs[d.id] != nil {
				lines = append(lines, "var "+d.id.Name+" "+d.typ)
			}
		}
	}
	src := func(e ast.Expr) string { return fix.Source(pass.Fset, e) }
	body := "nil"
	if method == "MethodPost" {
		body = src(call.Args[2])
	}
	lines = append(lines,
		"var "+req+" *"+http+".Request",
		req+", "+errID.Name+" = "+http+".NewRequestWithContext("+ctx+", "+http+"."+method+", "+src(call.Args[0])+", "+body+")",
		"if "+errID.Name+" == nil {")
	if method == "MethodPost" {
		lines = append(lines, "\t"+req+".Header.Set(\"Content-Type\", "+src(call.Args[1])+")")
	}
	lines = append(lines,
		"\t"+resp.Name+", "+errID.Name+" = (&"+http+".Client{Timeout: 30 * "+timeName+".Second}).Do("+req+")",
		"}")
	text := fix.Lines(fix.Indent(pass, stmt.Pos()), lines...)
	edits = append(edits, analysis.TextEdit{Pos: stmt.Pos(), End: stmt.End(), NewText: []byte(text)})
	return []analysis.SuggestedFix{{
		Message:   "send the request with " + ctx + " on a client with a 30s timeout",
		TextEdits: edits,
	}}
}

// assignOf returns the statement a, b := call (or =) that stands in a
// block of file, or nil.
func assignOf(file *ast.File, call *ast.CallExpr) *ast.AssignStmt {
	path, _ := astutil.PathEnclosingInterval(file, call.Pos(), call.End())
	i := 1 // path[0] is call
	for i < len(path) {
		if _, ok := path[i].(*ast.ParenExpr); !ok {
			break
		}
		i++
	}
	if i+1 >= len(path) {
		return nil
	}
	as, ok := path[i].(*ast.AssignStmt)
	if !ok || len(as.Lhs) != 2 || len(as.Rhs) != 1 || ast.Unparen(as.Rhs[0]) != ast.Expr(call) {
		return nil
	}
	switch path[i+1].(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
		return as
	}
	return nil
}

type checker struct {
	info *types.Info
	idx  assign.Index
}

// noTimeout reports whether client is a variable (or literal) whose every
// value is an http.Client built without Timeout, and whose Timeout field
// is never set.
func (c *checker) noTimeout(client ast.Expr) bool {
	client = ast.Unparen(client)
	if lit := clientLit(c.info, client); lit != nil {
		return !hasTimeout(lit)
	}
	id, ok := client.(*ast.Ident)
	if !ok {
		return false
	}
	obj := c.info.ObjectOf(id)
	writes := c.idx[obj]
	if len(writes) == 0 {
		return false
	}
	for _, w := range writes {
		if w.Op == token.VAR && w.Rhs == nil && match.Named(obj.Type(), "net/http", "Client") {
			if _, ptr := obj.Type().(*types.Pointer); !ptr {
				continue // var c http.Client: the zero Client has no Timeout
			}
		}
		if w.Tuple || w.Rhs == nil {
			return false
		}
		if lit := clientLit(c.info, ast.Unparen(w.Rhs)); lit == nil || hasTimeout(lit) {
			if !isNewClient(c.info, w.Rhs) {
				return false
			}
		}
	}
	// client.Timeout = ... anywhere in the package.
	for o, ws := range c.idx {
		if o.Name() != "Timeout" {
			continue
		}
		for _, w := range ws {
			if sel, ok := w.Lhs.(*ast.SelectorExpr); ok {
				if xid, ok := ast.Unparen(sel.X).(*ast.Ident); ok && c.info.ObjectOf(xid) == obj {
					return false
				}
			}
		}
	}
	return true
}

// clientLit returns the http.Client composite literal e is (or points
// to), or nil.
func clientLit(info *types.Info, e ast.Expr) *ast.CompositeLit {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = ast.Unparen(u.X)
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	if !match.Named(info.TypeOf(lit), "net/http", "Client") {
		return nil
	}
	return lit
}

func isNewClient(info *types.Info, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || id.Name != "new" {
		return false
	}
	return match.Named(info.TypeOf(call.Args[0]), "net/http", "Client")
}

func hasTimeout(lit *ast.CompositeLit) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Timeout" {
				return true
			}
		}
	}
	return false
}

// noContext reports whether req is a variable whose every value comes
// from http.NewRequest, which gives it no context.
func (c *checker) noContext(req ast.Expr) bool {
	id, ok := ast.Unparen(req).(*ast.Ident)
	if !ok {
		return false
	}
	return match.BackgroundRequest(c.info, c.idx[c.info.ObjectOf(id)])
}
