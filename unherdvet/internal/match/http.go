package match

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"

	"github.com/unherd/unherd/unherdvet/internal/assign"
)

// HTTPCall describes a call that sends an HTTP request.
type HTTPCall struct {
	// Func is "http.Get", "(*http.Client).Do" and so on.
	Func *types.Func
	// Client is the *http.Client receiver, nil for the package functions
	// (which use http.DefaultClient).
	Client ast.Expr
	// Method is the HTTP method when the call fixes it (GET for Get, POST
	// for Post and PostForm, HEAD for Head), "" for Do and RoundTrip.
	Method string
	// Req is the *http.Request argument of Do and RoundTrip.
	Req ast.Expr
}

// HTTP returns what call sends, or nil if it sends no HTTP request.
func HTTP(info *types.Info, call *ast.CallExpr) *HTTPCall {
	fn := Callee(info, call)
	if fn == nil {
		return nil
	}
	methods := map[string]string{"Get": "GET", "Head": "HEAD", "Post": "POST", "PostForm": "POST", "Do": ""}
	m, ok := methods[fn.Name()]
	switch {
	case ok && Func(fn, "net/http", fn.Name()) && fn.Name() != "Do":
		return &HTTPCall{Func: fn, Method: m}
	case ok && Method(fn, "net/http", "Client", fn.Name()):
		h := &HTTPCall{Func: fn, Method: m, Client: ast.Unparen(call.Fun).(*ast.SelectorExpr).X}
		if fn.Name() == "Do" && len(call.Args) == 1 {
			h.Req = call.Args[0]
		}
		return h
	case fn.Name() == "RoundTrip" && len(call.Args) == 1 && Named(info.TypeOf(call.Args[0]), "net/http", "Request"):
		return &HTTPCall{Func: fn, Req: call.Args[0]}
	}
	return nil
}

// NewRequest returns the method and whether the request has a context,
// for a call of http.NewRequest or http.NewRequestWithContext; ok false
// for any other call. The method is "" when it is not a constant.
func NewRequest(info *types.Info, call *ast.CallExpr) (method string, withCtx, ok bool) {
	fn := Callee(info, call)
	var m ast.Expr
	switch {
	case Func(fn, "net/http", "NewRequest") && len(call.Args) == 3:
		m = call.Args[0]
	case Func(fn, "net/http", "NewRequestWithContext") && len(call.Args) == 4:
		m, withCtx = call.Args[1], true
	default:
		return "", false, false
	}
	if tv := info.Types[m]; tv.Value != nil && tv.Value.Kind() == constant.String {
		method = strings.ToUpper(constant.StringVal(tv.Value))
	}
	return method, withCtx, true
}

// IsDefaultClient reports whether e is http.DefaultClient.
func IsDefaultClient(info *types.Info, e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	return ok && Object(info.Uses[sel.Sel], "net/http", "DefaultClient")
}

// Remote reports whether call goes to another service, as far as can be
// told: it sends an HTTP request, takes a context (the mark of I/O in Go
// APIs), or takes gRPC call options.
func Remote(info *types.Info, call *ast.CallExpr) bool {
	if HTTP(info, call) != nil {
		return true
	}
	for _, a := range call.Args {
		if t := info.TypeOf(a); t != nil && (IsContext(t) || Named(t, "google.golang.org/grpc", "CallOption")) {
			return true
		}
	}
	return false
}

// BackgroundRequest reports whether writes, every write of a request
// variable, all give it a request made by http.NewRequest, whose
// Context() is context.Background(): nothing can cancel it. No writes
// report false.
func BackgroundRequest(info *types.Info, writes []assign.Assign) bool {
	if len(writes) == 0 {
		return false
	}
	for _, w := range writes {
		call, ok := ast.Unparen(w.Rhs).(*ast.CallExpr)
		if !ok {
			return false
		}
		if _, withCtx, ok := NewRequest(info, call); !ok || withCtx {
			return false
		}
	}
	return true
}
