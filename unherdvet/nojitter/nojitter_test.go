package nojitter_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/nojitter"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), nojitter.Analyzer, "a")
}

func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), nojitter.Analyzer, "fix")
}
