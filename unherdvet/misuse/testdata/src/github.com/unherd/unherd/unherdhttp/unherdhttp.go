// Package unherdhttp is a stub of unherd's unherdhttp for the tests.
package unherdhttp

import (
	"net/http"

	"github.com/unherd/unherd/retry"
)

type Config struct{ Retry retry.Config }

type Transport struct{ http.RoundTripper }

func NewTransport(base http.RoundTripper, cfg Config) (*Transport, error) { return &Transport{}, nil }
