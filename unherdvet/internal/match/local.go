package match

import (
	"go/ast"
	"go/types"
	"strings"
)

// Local reports whether call acts only on this machine, where clients
// cannot fail together because one dependency failed them: listening on
// a port, a file or directory operation, a file lock, running a local
// command. Calls of the package's own functions are followed (depth
// levels) through bodies, which bodies maps: such a function is local
// when it makes a local call and nothing that goes to another service.
func Local(info *types.Info, bodies map[*types.Func]*ast.BlockStmt, call *ast.CallExpr, depth int) bool {
	fn := Callee(info, call)
	if fn == nil {
		return false
	}
	if localFunc(fn) {
		return true
	}
	body := bodies[fn]
	if body == nil || depth == 0 {
		return false
	}
	local, remote := false, false
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok || remote {
			return !remote
		}
		switch {
		case Local(info, bodies, c, depth-1):
			local = true
		case Remote(info, c) || Dials(Callee(info, c)):
			remote = true
		}
		return !remote
	})
	return local && !remote
}

// localFunc reports whether fn is one of the local operations Local
// knows.
func localFunc(fn *types.Func) bool {
	pkg := ""
	if fn.Pkg() != nil {
		pkg = fn.Pkg().Path()
	}
	switch pkg {
	case "os", "io/ioutil", "path/filepath", "syscall", "golang.org/x/sys/unix", "golang.org/x/sys/windows", "os/exec":
		return true // files, directories, processes, locks
	case "net":
		return strings.HasPrefix(fn.Name(), "Listen")
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		switch fn.Name() {
		case "TryLock", "TryRLock", "TryLockContext", "TryRLockContext":
			return true // file locks (flock, lockfile)
		}
		if strings.HasSuffix(pkg, "flock") || strings.HasSuffix(pkg, "lockfile") {
			return true
		}
	}
	return false
}

// Dials reports whether fn opens a connection to another service by
// address: net.Dial and its kin, sql.Open, grpc.Dial, and a third
// party's Dial(addr).
func Dials(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	name := fn.Name()
	switch fn.Pkg().Path() {
	case "net", "crypto/tls", "net/rpc", "net/smtp":
		return strings.HasPrefix(name, "Dial")
	case "database/sql":
		return name == "Open" || name == "Ping" || name == "PingContext"
	case "google.golang.org/grpc":
		return strings.HasPrefix(name, "Dial") || name == "NewClient"
	}
	// A third party's Dial(addr) (transport.Dial(url), websocket.Dial):
	// a package-level function outside the standard library, named for
	// dialling, given the address as its first argument.
	sig := fn.Signature()
	return strings.Contains(fn.Pkg().Path(), ".") && sig.Recv() == nil && strings.HasPrefix(name, "Dial") &&
		sig.Params().Len() > 0 && types.Identical(sig.Params().At(0).Type(), types.Typ[types.String])
}

// Bodies maps the package's declared functions and methods to their
// bodies, for checks that follow a call into the package's own code.
func Bodies(info *types.Info, files []*ast.File) map[*types.Func]*ast.BlockStmt {
	m := make(map[*types.Func]*ast.BlockStmt)
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					m[fn] = fd.Body
				}
			}
		}
	}
	return m
}

// Pure reports whether fn only computes, from its arguments, something
// that trying again cannot change: parsing and formatting in the
// standard library (strconv, encoding, url.Parse, time.Parse).
func Pure(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	switch fn.Pkg().Path() {
	case "strconv", "strings", "bytes", "fmt", "errors", "regexp", "unicode/utf8", "path",
		"encoding/json", "encoding/xml", "encoding/base64", "encoding/hex", "encoding/pem", "encoding/csv", "mime":
		return true
	case "net/url", "time", "net/netip":
		return strings.HasPrefix(fn.Name(), "Parse")
	case "net":
		return strings.HasPrefix(fn.Name(), "Parse") || fn.Name() == "SplitHostPort"
	}
	return false
}

// RemoteDeep is Remote, or a dial, for call or, through the bodies of the
// package's own functions and the function literals call is given (depth
// levels), for a call they make: b.getUpdates() that reaches b.client.Do
// two calls down.
func RemoteDeep(info *types.Info, bodies map[*types.Func]*ast.BlockStmt, call *ast.CallExpr, depth int) bool {
	fn := Callee(info, call)
	if Remote(info, call) || Dials(fn) || clientMethod(fn) {
		return true
	}
	// c.withConn(func(conn *Conn) *Iter { return conn.query(ctx, q) }):
	// the work given to the call as a function literal.
	for _, a := range call.Args {
		if lit, ok := ast.Unparen(a).(*ast.FuncLit); ok && depth > 0 && remoteIn(info, bodies, lit.Body, depth-1) {
			return true
		}
	}
	if fn == nil && depth > 0 {
		// retry(fn func() error) calling fn(): what the package's callers
		// pass for the parameter decides.
		return passedRemote(info, bodies, call, depth-1)
	}
	body := bodies[fn]
	if body == nil {
		return fn != nil && fn.Pkg() != nil && fn.Pkg() != current(info) && netMethod(fn)
	}
	if depth == 0 {
		return false
	}
	return remoteIn(info, bodies, body, depth-1)
}

// remoteIn reports whether body makes a call that RemoteDeep (depth
// levels) reports.
func remoteIn(info *types.Info, bodies map[*types.Func]*ast.BlockStmt, body *ast.BlockStmt, depth int) bool {
	for n := range ast.Preorder(body) {
		if c, ok := n.(*ast.CallExpr); ok && RemoteDeep(info, bodies, c, depth) {
			return true
		}
	}
	return false
}

// current returns the package info describes, or nil.
func current(info *types.Info) *types.Package {
	for _, o := range info.Defs {
		if o != nil && o.Pkg() != nil {
			return o.Pkg()
		}
	}
	return nil
}

// netMethod reports whether fn is a method, returning an error, of a
// type from another package that talks to the network itself (it imports
// net, net/http, crypto/tls or gRPC): a client library's operation such
// as a producer's CommitTxn, which takes no context. Methods named for
// taking what comes (Read..., Recv..., Receive..., Next..., Accept...,
// Close...) send no request and do not count, nor does a method of an
// interface that no struct of that package implements (a handler the
// caller supplies).
func netMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || sig.Results().Len() == 0 || !IsError(sig.Results().At(sig.Results().Len()-1).Type()) {
		return false
	}
	if iface, ok := sig.Recv().Type().Underlying().(*types.Interface); ok && !implemented(fn.Pkg(), iface) {
		return false
	}
	for _, p := range []string{"Read", "Recv", "Receive", "Next", "Accept", "Close", "Scan", "Write"} {
		if strings.HasPrefix(fn.Name(), p) {
			return false
		}
	}
	return networked(fn.Pkg())
}

// networked reports whether pkg talks to the network itself: it imports
// net, net/http, crypto/tls or gRPC, or a package of its own repository
// that does (a client whose transport is a sibling package, such as
// example.com/acme/sdk/queue importing example.com/acme/sdk/api).
func networked(pkg *types.Package) bool {
	if netImport(pkg) {
		return true
	}
	root := repoRoot(pkg.Path())
	for _, imp := range pkg.Imports() {
		if root != "" && repoRoot(imp.Path()) == root && netImport(imp) {
			return true
		}
	}
	return false
}

// netImport reports whether pkg imports net, net/http, crypto/tls or
// gRPC.
func netImport(pkg *types.Package) bool {
	for _, imp := range pkg.Imports() {
		switch imp.Path() {
		case "net", "net/http", "crypto/tls", "google.golang.org/grpc":
			return true
		}
	}
	return false
}

// repoRoot returns the first three elements of an import path whose first
// element is a host name (github.com/owner/repo), "" for any other path.
func repoRoot(path string) string {
	parts := strings.SplitN(path, "/", 4)
	if len(parts) < 3 || !strings.Contains(parts[0], ".") {
		return ""
	}
	return strings.Join(parts[:3], "/")
}

// passedRemote reports whether call calls a parameter of one of the
// package's functions (func retry(fn func() error) { ... fn() ... })
// that some call of that function in the package is given as a function
// literal, or a function of the package, making a call RemoteDeep
// reports (depth levels).
func passedRemote(info *types.Info, bodies map[*types.Func]*ast.BlockStmt, call *ast.CallExpr, depth int) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return false
	}
	var holder *types.Func
	index := -1
	for fn := range bodies {
		params := fn.Type().(*types.Signature).Params()
		for i := range params.Len() {
			if params.At(i) == v {
				holder, index = fn, i
			}
		}
	}
	if holder == nil {
		return false
	}
	for _, body := range bodies {
		for n := range ast.Preorder(body) {
			c, ok := n.(*ast.CallExpr)
			if !ok || index >= len(c.Args) {
				continue
			}
			if callee := Callee(info, c); callee == nil || callee.Origin() != holder.Origin() {
				continue
			}
			switch a := ast.Unparen(c.Args[index]).(type) {
			case *ast.FuncLit:
				if remoteIn(info, bodies, a.Body, depth) {
					return true
				}
			case *ast.Ident, *ast.SelectorExpr:
				if b := bodies[calleeOf(info, a)]; b != nil && remoteIn(info, bodies, b, depth) {
					return true
				}
			}
		}
	}
	return false
}

// Streams reports whether call returns a channel that another service
// feeds: a function or method of another package that talks to the
// network itself (a watch, a subscription), or a function of the package
// whose body makes a call RemoteDeep reports (depth levels).
func Streams(info *types.Info, bodies map[*types.Func]*ast.BlockStmt, call *ast.CallExpr, depth int) bool {
	t := info.TypeOf(call)
	if tup, ok := t.(*types.Tuple); ok {
		if tup.Len() == 0 {
			return false
		}
		t = tup.At(0).Type()
	}
	if t == nil {
		return false
	}
	if _, ok := t.Underlying().(*types.Chan); !ok {
		return false
	}
	fn := Callee(info, call)
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	if body := bodies[fn]; body != nil {
		return depth > 0 && remoteIn(info, bodies, body, depth-1)
	}
	return fn.Pkg() != current(info) && networked(fn.Pkg())
}

// implemented reports whether a struct type of pkg (or a pointer to
// one) implements iface.
func implemented(pkg *types.Package, iface *types.Interface) bool {
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		if _, ok := tn.Type().Underlying().(*types.Struct); !ok {
			continue
		}
		if types.Implements(tn.Type(), iface) || types.Implements(types.NewPointer(tn.Type()), iface) {
			return true
		}
	}
	return false
}

// IsMethod reports whether fn is a method (of a type or an interface).
func IsMethod(fn *types.Func) bool {
	if fn == nil {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil
}

// clientMethod reports whether fn is a method named for sending a
// request (Request, Do, Call, Invoke, RoundTrip) of a type from another
// package: an API client's entry point, whose body is not at hand.
func clientMethod(fn *types.Func) bool {
	if !IsMethod(fn) {
		return false
	}
	switch fn.Name() {
	case "Request", "Do", "Call", "Invoke", "RoundTrip":
		return true
	}
	return false
}
