package nodelay_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/nodelay"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, nodelay.Analyzer) }
