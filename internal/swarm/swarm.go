// Package swarm starts the goroutines of the concurrent tests, n at once,
// and waits for them all, for a bounded time. Seeded gives each goroutine
// a random source of its own, seeded by its index and the test's seed, so
// that every goroutine draws the same sequence on every run whatever the
// interleaving.
package swarm

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/unherd/unherd/internal/await"
)

// Go calls f on n goroutines, the g-th with g, and returns when every call
// has returned. It waits at most await.Timeout, then fails t; inside a
// synctest bubble that is the bubble's time, so goroutines that sleep
// through more than await.Timeout of it need a wait of their own.
func Go(t testing.TB, n int, f func(g int)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { f(g) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	await.Recv(t, done, fmt.Sprintf("the %d goroutines of the swarm", n))
}

// Seeded is Go with, in place of its index, a PCG seeded (index, seed)
// for each goroutine.
func Seeded(t testing.TB, n int, seed uint64, f func(r *rand.Rand)) {
	t.Helper()
	Go(t, n, func(g int) { f(rand.New(rand.NewPCG(uint64(g), seed))) })
}
