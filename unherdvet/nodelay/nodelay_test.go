package nodelay_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/nodelay"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), nodelay.Analyzer, "a")
}
