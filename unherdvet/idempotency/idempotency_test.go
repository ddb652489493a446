package idempotency_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/unherd/unherd/unherdvet/idempotency"
)

func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), idempotency.Analyzer, "a")
}
