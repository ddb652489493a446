package unbounded_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/unbounded"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, unbounded.Analyzer) }
