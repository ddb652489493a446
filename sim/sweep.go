package sim

import (
	"context"
	"runtime"
	"sync"
)

// sweep runs n independent runs, fn(i) for i in [0, n), over o.Workers
// goroutines, and returns their results by index: the output does not
// depend on the number of workers or on which finished first. Each run is
// one goroutine's work from start to end. sweep stops starting runs when
// ctx is done and returns ctx's error.
func sweep[R any](ctx context.Context, o Options, n int, fn func(i int) R) ([]R, error) {
	out := make([]R, n)
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	var (
		mu   sync.Mutex // serialises Progress and guards next, done
		next int
		done int
		wg   sync.WaitGroup
	)
	if o.Progress != nil {
		o.Progress(0, n)
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if o.Slots != nil {
					select {
					case o.Slots <- struct{}{}:
					case <-ctx.Done():
						return
					}
				}
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n || ctx.Err() != nil {
					release(o.Slots)
					return
				}
				out[i] = fn(i)
				release(o.Slots)
				mu.Lock()
				done++
				if o.Progress != nil {
					o.Progress(done, n)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// release gives back a slot taken from slots, if any.
func release(slots chan struct{}) {
	if slots != nil {
		<-slots
	}
}
