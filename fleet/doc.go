// Package fleet is a retry budget shared by a whole fleet of processes:
// the fleet's retries are at most a share of the fleet's requests over a
// sliding window, plus a fleet-wide floor, however the traffic is spread
// over the processes.
//
// A per-process budget does not bound a fleet: with a floor of 10
// retries per second per process, a million processes may send ten
// million retries a second into an outage. A [Budget] keeps its hot path
// local (Record adds to a counter, Withdraw takes a pacer credit and a
// token from a lease, no round trip) and syncs in the background: each
// sync reports the requests counted since the last one, returns the
// unused lease and leases new retry tokens from a shared [Ledger], in
// batches of twice what the process retried in the last interval, at
// most what its pace can spend before the next sync.
//
// Every process paces its own retries, in every state: each request earns
// Ratio retry credits, and the process's share of the fleet's floor (its
// share of the fleet's requests in the window) earns credits over time; a
// retry takes one, and credits saved are capped at what a hundredth of
// the window earns. The ledger's window bounds the fleet over the window;
// the pacers spread that allowance evenly over time, so the fleet's
// retries in any second stay near its share (Ratio times that second's
// requests, plus the floor) when calls start failing, when the ledger
// dies and when it comes back, rather than spending a window's savings
// at once. A process that earns less than one retry per hundredth of the
// window is paced by its lease instead: it asks for its pace over one
// interval (a fraction drawn from Config.Rand), so that a large fleet of
// slow processes does not hold one idle token each.
//
// Most users take the Redis ledger of package unherdredis, which runs
// this package's Budget over a [Transport] on Redis (unherdredis's
// ExampleNewBudget is this, compiled with the package's tests):
//
//	b, err := unherdredis.NewBudget(rdb, "payments", unherdredis.BudgetConfig{})
//	defer b.Close()
//	cfg := retry.Config{Budget: b}
//
// The defaults are budget.Ratio's: 10% of the requests of the last 10 s
// (Google SRE book, "Handling Overload"), plus a floor of 10 retries per
// second for the whole fleet (Finagle's and Linkerd's window and floor,
// applied fleet-wide as Envoy and Linkerd apply retry budgets in their
// proxies). Syncs run every second with a 200 ms timeout.
//
// A lease is counted against the fleet when it is granted, and stays
// counted until it leaves the window or is returned (at the next sync,
// or when Run stops), so a process that dies loses only its unused lease.
// When a sync fails or times out the budget falls back: it spends what
// is left of its lease, then retries on its pacer alone (and on
// Config.Fallback, if set), at the share of the fleet's floor it last
// knew; it says so through Config.OnState and [Budget.State], and
// returns to the shared budget at the first sync that succeeds, which
// reports the retries made outside a lease (Report.Spent) so that the
// ledger, even one restarted empty, counts them. No Withdraw or Record
// ever waits for the ledger.
//
// What an operator sizes and watches: the sync interval (Config.Interval,
// 1 s with 10% jitter; a process whose lease runs low syncs early, at most
// ten times an interval, or four when the ledger granted less than it
// asked), which sets how stale each process's view of the
// fleet may be; the sync timeout (200 ms), after which a process counts
// the ledger as unreachable; the largest lease (Config.MaxLease), which
// bounds what one process can spend between syncs; and the ledger's own
// client timeouts (for Redis, the client's dial, read and write timeouts,
// which should be no longer than the sync timeout, and which Close waits
// for). The ledger keeps a window and one lease record per process, each
// expiring two windows after its last sync. Watch Budget.State (or
// Config.OnState): a fleet in fallback is bounded per process, each at
// the share it last knew, not by the ledger; a process that joins while
// the ledger is unreachable retries at DefaultFallbackMinPerSecond plus
// Ratio times its requests.
//
// [Budget.Report] and [Budget.Settle] split a sync into its two halves
// for drivers that carry the round trip themselves, such as the
// simulator, which runs this package's Budget and Ledger under virtual
// time.
package fleet
