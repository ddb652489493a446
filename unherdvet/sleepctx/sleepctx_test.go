package sleepctx_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/sleepctx"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), sleepctx.Analyzer, "a")
}

func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), sleepctx.Analyzer, "fix")
}
