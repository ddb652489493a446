// Package swarm starts the goroutines of the concurrent tests: n at once,
// each with a random source of its own, seeded by the goroutine's index
// and the test's seed, so that every goroutine draws the same sequence on
// every run whatever the interleaving.
package swarm

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/unherd/unherd/internal/await"
)

// Run calls f on n goroutines, the i-th with a PCG seeded (i, seed), and
// returns when every call has returned. It waits at most await.Timeout,
// then fails t.
func Run(t testing.TB, n int, seed uint64, f func(r *rand.Rand)) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(rand.New(rand.NewPCG(uint64(i), seed))) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	await.Recv(t, done, fmt.Sprintf("the %d goroutines of the swarm", n))
}
