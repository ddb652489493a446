// Package shedtest is what the tests of the server middleware that sheds
// load with a limit.Limiter (unherdhttp's Shed, unherdgrpc's server
// interceptors) share: limiters without a queue, and the check of how a
// request was released to the limiter.
package shedtest

import (
	"testing"
	"time"

	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/limit/limittest"
)

// NoQueue returns a limiter of a without a queue: a request over the
// limit is refused at once, for tests of the refusal itself.
func NoQueue(t testing.TB, a limit.Algorithm) *limit.Limiter {
	t.Helper()
	return configtest.Must(limit.New(limit.Config{Algorithm: a, MaxWait: -1}))(t)
}

// Full returns a limiter of 1 without a queue, and the token of its only
// slot: the server is full until the test releases it.
func Full(t testing.TB) (*limit.Limiter, limit.Token) {
	t.Helper()
	l := NoQueue(t, limit.Fixed(1))
	held, ok := l.Acquire(time.Now())
	if !ok {
		t.Fatal("could not take the only token")
	}
	return l, held
}

// Released checks that l has no request in flight and that alg, its
// algorithm, recorded how the one request sent was released: want is
// "served" or "dropped", or "" for no sample (Ignore).
func Released(t testing.TB, l *limit.Limiter, alg *limittest.Recorder, want string) {
	t.Helper()
	var got string
	switch s := alg.Samples(); {
	case len(s) > 1:
		t.Fatalf("samples %v, want at most one", s)
	case len(s) == 1 && s[0].Dropped:
		got = "dropped"
	case len(s) == 1:
		got = "served"
	}
	if got != want || l.InFlight() != 0 {
		t.Errorf("sample %q, in flight %d; want %q, 0", got, l.InFlight(), want)
	}
}
