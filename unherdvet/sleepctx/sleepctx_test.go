package sleepctx_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/sleepctx"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, sleepctx.Analyzer) }
