package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// unclaim resolves a claim whose outcome the middleware did not learn:
// Claim failed (its store timeout passed, or the connection broke) after
// the claim may have reached the store, and the store returned the token
// it drew (see Store). If the claim did take effect, nobody holds the
// record it made, and the key would answer 409 until its lease ran out;
// unclaim releases it by its token, in the background and again while
// the store does not answer, until a lease has passed (when the record,
// if any, has expired anyway). A release that finds no record of the
// token's is the common answer: the claim never took effect.
func (m *Middleware) unclaim(r *http.Request, key string, token uint64, cause error) {
	if token == 0 {
		return // the store knows the claim did not take effect
	}
	go func() {
		err := m.persist(r, m.lease, func(ctx context.Context) error { return m.store.Release(ctx, key, token) })
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			m.report(r, fmt.Errorf("idempotency: key %q: releasing a claim whose outcome was not known (%w): %w", key, cause, err))
		}
	}()
}
