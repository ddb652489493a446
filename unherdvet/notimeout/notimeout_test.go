package notimeout_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/notimeout"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), notimeout.Analyzer, "a")
}

func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), notimeout.Analyzer, "fix")
}
