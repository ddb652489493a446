package unbounded_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/unbounded"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), unbounded.Analyzer, "a")
}
