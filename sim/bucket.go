package sim

import "time"

// tokenBucket is a simulated server's admission limit: rate tokens per
// second of virtual time refill it up to burst, and each request it
// admits takes one. The outage and storm dependency's capacity and the
// ratelimit scenario's API limiter are both one.
type tokenBucket struct {
	rate   float64       // tokens per second
	burst  float64       // most tokens held
	tokens float64       // held as of last
	last   time.Duration // virtual time of the last take
}

// take refills the bucket to time t and reports whether a request
// arriving then is admitted, taking its token if so. A t before the
// latest one asked about counts as that one: the bucket is not refilled
// for it (the call model asks in send order, not arrival order).
func (b *tokenBucket) take(t time.Duration) bool {
	if t > b.last {
		b.tokens = min(b.burst, b.tokens+b.rate*(t-b.last).Seconds())
		b.last = t
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// freeList hands out the indices of a slice's items that were given back,
// the latest first, before the slice grows: the call slots of the call
// model, the layers' calls and the hedge requests reuse their memory.
type freeList []int32

// take returns an index given back, or n, the slice's length (the index
// of a new item the caller appends), and false when none is.
func (f *freeList) take(n int) (int32, bool) {
	if k := len(*f); k > 0 {
		id := (*f)[k-1]
		*f = (*f)[:k-1]
		return id, true
	}
	return int32(n), false
}

// put gives index id back.
func (f *freeList) put(id int32) { *f = append(*f, id) }
