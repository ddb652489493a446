package misuse_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/internal/vettest"
	"github.com/unherd/unherd/unherdvet/misuse"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, misuse.Analyzer) }
