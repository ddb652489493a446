package handlerretry_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/handlerretry"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), handlerretry.Analyzer, "a")
}
