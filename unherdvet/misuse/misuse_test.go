package misuse_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/misuse"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), misuse.Analyzer, "a")
}
