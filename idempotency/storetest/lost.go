package storetest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// LostAnswers is a Store whose claims, while Lose is set, take effect
// in the Store it wraps but whose answers never arrive: Claim waits for
// its context to end and returns the token it drew with the context's
// error, as a shared store does whose reply was lost on the way back.
// The middleware should release such a claim rather than let it hold
// the key for its lease; a test sets Lose, sends a request, clears it
// and sends the retry.
type LostAnswers struct {
	idempotency.Store
	Lose atomic.Bool
}

// Claim claims key in the wrapped Store and, while Lose is set, waits
// for ctx to end before it returns.
func (s *LostAnswers) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	c, err := s.Store.Claim(ctx, key, fp, lease)
	if err != nil || !s.Lose.Load() {
		return c, err
	}
	<-ctx.Done()
	return idempotency.Claim{Token: c.Token}, ctx.Err()
}
