package a

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// A goto back to a retry's label from inside the loops over the parts
// of an answer: each part carries its own error, and a retryable one
// sends the whole request again.

type shard struct {
	ID   int
	Code int
}

type shardGroup struct{ Shards []shard }

type offsetsAnswer struct {
	Code   int
	Groups []shardGroup
}

var (
	errStaleEpoch = errors.New("stale epoch")
	errUnsettled  = errors.New("unsettled")
)

func codeErr(code int) error {
	if code == 0 {
		return nil
	}
	return errUnsettled
}

func fetchOffsets(ctx context.Context) (*offsetsAnswer, error) { return nil, nil }

func refreshEpoch(ctx context.Context) error { return nil }

// Positive: the request goes round at once after a refreshed epoch, and
// a constant second after a part that is not settled yet, from inside
// the loops over the answer's groups and parts.
func loadOffsets(ctx context.Context) (map[int]int, error) {
	out := make(map[int]int)
again:
	resp, err := fetchOffsets(ctx)
	if err != nil {
		return nil, err
	}
	if err = codeErr(resp.Code); err != nil {
		if errors.Is(err, errStaleEpoch) {
			if err := refreshEpoch(ctx); err != nil {
				return nil, err
			}
			goto again
		}
		return nil, err
	}
	for _, g := range resp.Groups {
		for _, s := range g.Shards {
			if err := codeErr(s.Code); err != nil {
				if errors.Is(err, errUnsettled) {
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(time.Second): // want `nojitter: retry loop waits a constant 1s`
						goto again
					}
				}
				continue
			}
			out[s.ID] = s.Code
		}
	}
	return out, nil
}

// Negative: going back from the parts after a random delay.
func loadOffsetsJittered(ctx context.Context) (map[int]int, error) {
	out := make(map[int]int)
retry:
	resp, err := fetchOffsets(ctx)
	if err == nil {
		for _, g := range resp.Groups {
			for _, s := range g.Shards {
				if err := codeErr(s.Code); err != nil {
					select {
					case <-time.After(time.Second/2 + rand.N(time.Second)):
						goto retry
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				out[s.ID] = s.Code
			}
		}
		return out, nil
	}
	time.Sleep(rand.N(2 * time.Second))
	goto retry
}

type pageAnswer struct {
	Items []int
	More  bool
}

func listPage(ctx context.Context, after int) (*pageAnswer, error) { return nil, nil }

// Negative: after a success, the goto back from the loop over the items
// fetches the next page, pausing between pages; nothing failed.
func listAll(ctx context.Context) ([]int, error) {
	var all []int
	after := 0
next:
	page, err := listPage(ctx, after)
	if err != nil {
		if errors.Is(err, errStaleEpoch) {
			goto next
		}
		return nil, err
	}
	for i, it := range page.Items {
		all = append(all, it)
		if i == len(page.Items)-1 && page.More {
			after = it
			time.Sleep(100 * time.Millisecond)
			goto next
		}
	}
	return all, nil
}
