package unherdgrpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/unherd/unherd/idempotency"
)

// renewal renews a shared store's lease on a key every third of its
// length while the handler runs. A renewal that finds the lease lost
// cancels the handler's context with the store's error; one that fails
// otherwise is tried again after a sixth of the lease.
type renewal struct {
	id     *idempotent
	ctx    context.Context // the call's, for the store's values
	key    string
	token  uint64
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	lost    error
}

// start arms the first renewal.
func (r *renewal) start() {
	r.mu.Lock()
	r.t = time.AfterFunc(r.id.lease/3, r.renew)
	r.mu.Unlock()
}

func (r *renewal) renew() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	sctx, cancel := r.id.storeCtx(r.ctx)
	err := r.id.store.Renew(sctx, r.key, r.token, r.id.lease)
	cancel()
	switch {
	case errors.Is(err, idempotency.ErrLeaseLost):
		r.lost = err
		r.cancel(err)
	case err != nil:
		r.t.Reset(r.id.lease / 6)
	default:
		r.t.Reset(r.id.lease / 3)
	}
}

// stop ends the renewals, waiting for one in progress, and returns the
// error of a renewal that found the lease lost.
func (r *renewal) stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.t != nil {
		r.t.Stop()
	}
	return r.lost
}
