package unherdredis

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/fleet"
)

// DefaultBudgetPrefix starts the name of every key a fleet Budget writes.
const DefaultBudgetPrefix = "unherd:fleet:"

// BudgetConfig configures a [Budget]: the fleet budget's settings, and
// where its keys live. The zero value has fleet.Config's defaults and
// DefaultBudgetPrefix.
type BudgetConfig struct {
	fleet.Config
	// Prefix starts every key name. Zero means DefaultBudgetPrefix.
	Prefix string
}

// Budget is a fleet.Budget whose ledger is in Redis, syncing in a
// goroutine of its own until Close. Every process that opens a Budget of
// the same name (and prefix) on the same Redis shares one budget; give
// each process the same BudgetConfig.
//
// The ledger is two keys in one Cluster slot, whose names carry the
// budget's name as a hash tag: a hash of the window's slots
// ("unherd:fleet:{name}:w") and one lease record per process
// ("unherd:fleet:{name}:l:<id>"), both expiring two windows after the
// last sync. A sync is one Lua script, one round trip, that books the
// reported requests, un-books the returned lease and grants the new one,
// atomically, on the Redis server's clock (so the processes' clocks need
// not agree).
//
// A sync is bounded by Config.Timeout even when the client's own
// timeouts are longer; the abandoned command ends with the client's
// timeouts, and Close waits for it, so give the client read and dial
// timeouts no longer than you want Close to wait.
//
// A Budget is safe for concurrent use; it implements budget.Budget and
// budget.Refunder through its fleet.Budget.
type Budget struct {
	*fleet.Budget
	ledger *Ledger
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

// NewBudget validates cfg and starts the budget called name, syncing
// through c. The name must not contain braces.
func NewBudget(c redis.UniversalClient, name string, cfg BudgetConfig) (*Budget, error) {
	l, err := NewLedger(c, name, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	fb, err := fleet.New(cfg.Config, l)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Budget{Budget: fb, ledger: l, cancel: cancel}
	b.done.Go(func() { fb.Run(ctx) })
	return b, nil
}

// Close stops the budget's syncs, gives its unused lease back to Redis
// (waiting at most Config.Timeout), and waits for its commands to end.
// The budget then answers Withdraw from its fallback.
func (b *Budget) Close() error {
	b.once.Do(func() {
		b.cancel()
		b.done.Wait()
		_ = b.ledger.Close()
	})
	return nil
}

// Keys returns the names of the Redis keys of the budget's window and of
// this process's lease record.
func (b *Budget) Keys() (window, lease string) {
	return b.ledger.window, b.ledger.lease + b.ID()
}

// Ledger is a fleet.Transport on Redis: the ledger of the budget called
// name, for drivers that run their own fleet.Budget (Budget runs one).
// Its keys are described at [Budget]. It is safe for concurrent use.
type Ledger struct {
	c             redis.UniversalClient
	window, lease string
	wg            sync.WaitGroup // commands still running
}

// NewLedger returns the ledger of the budget called name, whose keys
// start with prefix (empty means DefaultBudgetPrefix). The name must not
// be empty or contain braces.
func NewLedger(c redis.UniversalClient, name, prefix string) (*Ledger, error) {
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("%w: budget name %q is empty or contains a brace", fleet.ErrInvalidConfig, name)
	}
	tag := cmp.Or(prefix, DefaultBudgetPrefix) + "{" + name + "}"
	return &Ledger{c: c, window: tag + ":w", lease: tag + ":l:"}, nil
}

// Close waits for the commands that syncs abandoned at their timeout to
// end (they end with the client's own timeouts).
func (l *Ledger) Close() error {
	l.wg.Wait()
	return nil
}

// syncScript is fleet.Ledger.SyncAt in Lua. KEYS[1] is the window hash,
// with fields r<slot> (requests) and g<slot> (granted retries); KEYS[2]
// the process's lease record: s (slot of the grant), g (tokens granted),
// t (cumulative requests reported). ARGV: requests, delta, returned,
// want, slot ms, slots, ratio, reserve, spent, span ms. It returns the grant and the
// window's requests and retries.
var syncScript = redis.NewScript(`
local t = redis.call('TIME')
local width, n = tonumber(ARGV[5]), tonumber(ARGV[6])
local cur = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / width)
local low = cur - n + 1
local req, ret = 0, 0
local h = redis.call('HGETALL', KEYS[1])
for i = 1, #h, 2 do
  local s = tonumber(string.sub(h[i], 2))
  if s < low then
    redis.call('HDEL', KEYS[1], h[i])
  elseif string.sub(h[i], 1, 1) == 'r' then
    req = req + tonumber(h[i + 1])
  else
    ret = ret + tonumber(h[i + 1])
  end
end
local total, booked = tonumber(ARGV[1]), tonumber(ARGV[2])
local l = redis.call('HMGET', KEYS[2], 's', 'g', 't')
if l[1] then
  local ls = tonumber(l[1])
  local back = math.min(tonumber(ARGV[3]), tonumber(l[2]))
  if ls >= low and back > 0 then
    redis.call('HINCRBY', KEYS[1], 'g' .. ls, -back)
    ret = ret - back
  end
  booked = math.min(booked, math.max(0, total - tonumber(l[3])))
end
local spent = math.max(tonumber(ARGV[9]) or 0, 0)
local k = math.min(math.max(math.floor((tonumber(ARGV[10]) or 0) / width), 1), n)
for i = cur - k + 1, cur do
  local q, s = math.floor(booked / k), math.floor(spent / k)
  if i == cur then
    q, s = booked - q * (k - 1), spent - s * (k - 1)
  end
  if q > 0 then
    redis.call('HINCRBY', KEYS[1], 'r' .. i, q)
    req = req + q
  end
  if s > 0 then
    redis.call('HINCRBY', KEYS[1], 'g' .. i, s)
    ret = ret + s
  end
end
local g = math.floor(tonumber(ARGV[7]) * req + tonumber(ARGV[8]) - ret)
g = math.max(0, math.min(tonumber(ARGV[4]), g))
if g > 0 then
  redis.call('HINCRBY', KEYS[1], 'g' .. cur, g)
  ret = ret + g
end
redis.call('HSET', KEYS[2], 's', cur, 'g', g, 't', total)
redis.call('PEXPIRE', KEYS[2], width * n * 2)
redis.call('PEXPIRE', KEYS[1], width * n * 2)
return {g, req, ret}
`)

// Sync books r and returns the grant: one script, one round trip. It
// returns when the script answers or ctx is done, whichever comes first.
func (l *Ledger) Sync(ctx context.Context, r fleet.Report) (fleet.Grant, error) {
	type answer struct {
		v   []int64
		err error
	}
	ch := make(chan answer, 1)
	keys := []string{l.window, l.lease + r.ID}
	l.wg.Go(func() {
		v, err := syncScript.Run(ctx, l.c, keys,
			r.Requests, r.Delta, r.Returned, r.Want,
			r.Limits.Slot.Milliseconds(), r.Limits.Slots,
			strconv.FormatFloat(r.Limits.Ratio, 'g', -1, 64), strconv.FormatFloat(r.Limits.Reserve, 'g', -1, 64), r.Spent, r.Span.Milliseconds(),
		).Int64Slice()
		ch <- answer{v, err}
	})
	select {
	case a := <-ch:
		if a.err != nil {
			return fleet.Grant{}, fmt.Errorf("unherdredis: fleet sync: %w", a.err)
		}
		if len(a.v) != 3 {
			return fleet.Grant{}, fmt.Errorf("unherdredis: fleet sync: %d values from the script, want 3", len(a.v))
		}
		return fleet.Grant{Tokens: a.v[0], Requests: a.v[1], Retries: a.v[2]}, nil
	case <-ctx.Done():
		return fleet.Grant{}, fmt.Errorf("unherdredis: fleet sync: %w", ctx.Err())
	}
}
