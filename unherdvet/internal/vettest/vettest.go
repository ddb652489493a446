// Package vettest runs an analyzer over its reproductions in the
// package's testdata directory.
package vettest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"
)

// Run checks a's diagnostics against the // want comments of package
// "a" under testdata/src and, when a package "fix" is there too, the
// files its suggested fixes make against the .golden files beside them.
func Run(t *testing.T, a *analysis.Analyzer) {
	t.Helper()
	dir := analysistest.TestData()
	t.Run("diagnostics", func(t *testing.T) {
		analysistest.Run(t, dir, a, "a")
	})
	if _, err := os.Stat(filepath.Join(dir, "src", "fix")); err == nil {
		t.Run("fixes", func(t *testing.T) {
			analysistest.RunWithSuggestedFixes(t, dir, a, "fix")
		})
	}
}
