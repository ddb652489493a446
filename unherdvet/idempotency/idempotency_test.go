package idempotency_test

import (
	"testing"

	"github.com/unherd/unherd/unherdvet/idempotency"
	"github.com/unherd/unherd/unherdvet/internal/vettest"
)

func TestAnalyzer(t *testing.T) { vettest.Run(t, idempotency.Analyzer) }
