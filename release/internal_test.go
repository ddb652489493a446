package release_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNestedModulesUseNoRootInternal: no nested module's code (its tests
// aside) imports an internal package of the root module. The go command
// allows it, since the paths share a prefix, but a user's build picks the
// root module's version by minimal version selection, which may be newer
// than the one the nested module was released with: an internal package
// is free to change between them, a public API is not. What a nested
// module needs from the root is public there, or a copy of its own.
//
// Tests are left out: they run in the repository, where every module is
// at one version. The nested modules' tests import the root's
// internal/await, configtest, draws, golden, hedgetest, observecheck,
// overload, pause, services and shedtest.
func TestNestedModulesUseNoRootInternal(t *testing.T) {
	root := ".."
	const prefix = "github.com/unherd/unherd/internal"
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || module(root, path) == "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				t.Errorf("%s (module %s) imports the root module's %s", path, module(root, path), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// module returns the directory of the nested module that holds path, or
// "" if the root module holds it.
func module(root, path string) string {
	for dir := filepath.Dir(path); dir != root && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
	}
	return ""
}
