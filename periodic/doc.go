// Package periodic runs periodic work on a jittered schedule, so that a
// fleet's jobs spread over their period instead of striking together.
//
// A thousand processes that each run "every minute", on the minute, send
// their dependency a thousand requests in the same instant and nothing for
// the other 59 seconds; a thousand that each start a ticker when deployed
// together do the same. Give each one a [Schedule] and run the job with
// [Run] (or read a [Ticker]'s channel):
//
//	s := periodic.Schedule{Interval: time.Minute}
//	err := periodic.Run(ctx, s, func(ctx context.Context, tick time.Time) {
//		refreshCache(ctx)
//	})
//
// The zero fields are the safe default: each tick lands at a uniformly
// random point of its interval (full jitter over a Spread of one
// Interval), so the fleet's load is flat. Set Align to keep cron's "on each
// minute" grid with a bounded window after it (Spread), Jitter to one of
// package backoff's kinds, and Fixed to draw one phase per process and
// keep ticks exactly Interval apart.
//
// # No drift
//
// Slot k starts at anchor + k*Interval, a multiplication from the anchor,
// and each tick is its slot's start plus an offset in [0, Spread]: late
// timers, slow jobs and the jitter itself never accumulate. A tick whose
// time has passed (a job that ran long, a process that stalled) is
// skipped with its slot; the schedule never catches up with a burst.
//
// # Testing
//
// [Series] is the arithmetic without the clock: it takes the current
// instant and a random draw and returns the next tick, which is how the
// simulator's periodic scenario drives it. Ticker and Run read time only
// through package time, so tests run them under testing/synctest, and
// Schedule.Rand injects the randomness.
//
// Background: the thundering herd of cron-aligned jobs, and systemd's
// RandomizedDelaySec and FixedRandomDelay timer settings
// (https://www.freedesktop.org/software/systemd/man/latest/systemd.timer.html),
// which the Jitter and Fixed fields mirror.
package periodic
