package nojitter_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/nojitter"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, nojitter.Analyzer) }
