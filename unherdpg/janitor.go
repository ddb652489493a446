package unherdpg

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/unherd/unherd/periodic"
)

// DefaultJanitorInterval is the period of RunJanitor's runs: a table then
// holds its expired records a minute at most, beyond those of one TTL.
const DefaultJanitorInterval = time.Minute

// JanitorConfig configures [Store.RunJanitor]. The zero value deletes
// the expired records once a minute, at a random point of each minute.
type JanitorConfig struct {
	// Schedule says when the janitor runs, on package periodic's
	// jittered schedule: by default each run lands at a uniformly random
	// point of its Interval, so that the janitors of a fleet sharing the
	// table spread their deletions over the interval instead of
	// deleting together. A zero Interval means DefaultJanitorInterval;
	// the other fields are used as they are.
	Schedule periodic.Schedule

	// OnRun, if set, is called after each run, on the janitor's
	// goroutine, with how many records it deleted and the error that
	// ended it early (nil when it deleted every expired record it
	// found). A run that fails is not retried: the next run deletes
	// what it left.
	OnRun func(deleted int64, err error)
}

// RunJanitor deletes the expired records of the table at every tick of
// cfg.Schedule, as DeleteExpired does (in batches of
// StoreConfig.DeleteBatch rows, each its own statement), until ctx is
// done; it then returns ctx's error. Without it, or a job of your own
// that calls DeleteExpired, expired records stay in the table until
// their key is claimed again, and the table grows with every new key.
//
// RunJanitor runs on the calling goroutine and starts none that
// outlives it: run it in a goroutine of its own, and cancel ctx to stop
// it. It returns only once its statement in progress has ended, within
// StoreConfig.OpTimeout. Every process of a fleet may run one: their
// statements skip the rows another one is deleting. It returns an error
// wrapping periodic.ErrInvalid at once if the schedule does not
// validate.
func (s *Store) RunJanitor(ctx context.Context, cfg JanitorConfig) error {
	sched := cfg.Schedule
	sched.Interval = cmp.Or(sched.Interval, DefaultJanitorInterval)
	return periodic.Run(ctx, sched, func(ctx context.Context, _ time.Time) {
		n, err := s.sweep(ctx)
		if cfg.OnRun != nil {
			cfg.OnRun(n, err)
		}
	})
}

// sweep deletes expired records in batches, as DeleteExpired does, but
// waits for each statement to end, whatever ctx, so that nothing of it
// outlives RunJanitor; it starts no batch once ctx is done.
func (s *Store) sweep(ctx context.Context) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.deleteBatch(ctx)
		total += n
		if err != nil || n < int64(s.batch) {
			return total, err
		}
	}
}

// deleteBatch runs one statement of expiredSQL, bounded by OpTimeout but
// not by ctx, which bounds only the wait for a connection.
func (s *Store) deleteBatch(ctx context.Context) (int64, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("unherdpg: deleting expired records: %w", err)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opTimeout)
	defer cancel()
	tag, err := conn.Exec(fctx, s.expiredSQL, s.batch)
	s.put(conn)
	if err != nil {
		return 0, fmt.Errorf("unherdpg: deleting expired records: %w", err)
	}
	return tag.RowsAffected(), nil
}
