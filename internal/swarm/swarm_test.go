package swarm_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/swarm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every goroutine has run, once, when Go returns.
func TestGo(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	var got []int
	swarm.Go(t, n, func(g int) {
		mu.Lock()
		got = append(got, g)
		mu.Unlock()
	})
	slices.Sort(got)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("goroutines %v ran, want %v", got, want)
	}
}

// Each goroutine draws from the source seeded by its index and the seed.
func TestSeeded(t *testing.T) {
	const n, seed = 8, 42
	var mu sync.Mutex
	var got []uint64
	swarm.Seeded(t, n, seed, func(r *rand.Rand) {
		v := r.Uint64()
		mu.Lock()
		got = append(got, v)
		mu.Unlock()
	})
	var want []uint64
	for i := range n {
		want = append(want, rand.New(rand.NewPCG(uint64(i), seed)).Uint64())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("first draws %v, want %v", got, want)
	}
}
