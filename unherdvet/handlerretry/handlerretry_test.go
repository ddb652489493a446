package handlerretry_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/handlerretry"
	"github.com/unherd/unherd/unherdvet/internal/vettest"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, handlerretry.Analyzer) }
