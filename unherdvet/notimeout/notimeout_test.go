package notimeout_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/notimeout"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, notimeout.Analyzer) }
