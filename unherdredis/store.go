package unherdredis

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/idempotency"
)

// DefaultPrefix starts the name of every key a Store writes.
const DefaultPrefix = "unherd:idem:"

// StoreConfig configures a [Store]. The zero value uses DefaultPrefix.
type StoreConfig struct {
	// Prefix starts every key name, so that several applications can
	// share a Redis. Zero means DefaultPrefix.
	Prefix string
}

// Store is an idempotency.Store on Redis, shared by every process that
// uses the same Redis (standalone, Sentinel or Cluster) and prefix.
//
// A record is one hash whose name is the prefix and a hash tag of the
// key's SHA-256 ("unherd:idem:{3a7f…}"), so a record and anything kept
// beside it live in one Cluster slot; the client's key is not stored in
// clear. Each operation is one Lua script, one round trip: a claim and
// a completion cost two per request, a replay one, and a renewal one per
// third of a lease. A lease is the key's expiry: Redis deletes an
// in-flight record whose lease ran out, and a completed one after its
// TTL. Fencing tokens are random 64-bit numbers drawn by the claimer.
//
// It is safe for concurrent use.
type Store struct {
	c      redis.UniversalClient
	prefix string
}

// NewStore returns a Store that keeps its records through c.
func NewStore(c redis.UniversalClient, cfg StoreConfig) *Store {
	return &Store{c: c, prefix: cmp.Or(cfg.Prefix, DefaultPrefix)}
}

// RecordKey returns the name of the Redis key that holds key's record.
func (s *Store) RecordKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.prefix + "{" + hex.EncodeToString(sum[:16]) + "}"
}

// Record fields: st (1 in flight, 2 completed), tok, fp, resp.
var (
	claimScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'st', 'fp', 'resp')
if r[1] then return r end
redis.call('HSET', KEYS[1], 'st', '1', 'tok', ARGV[1], 'fp', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {'0'}
`)
	renewScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'st', 'tok')
if r[1] ~= '1' or r[2] ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)
	completeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'tok') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'st', '2', 'resp', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)
	releaseScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'st', 'tok')
if r[1] ~= '1' or r[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)
)

func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Claim implements idempotency.Store. When it fails, unless the script
// surely did not run (no connection could be had, or Redis answered with
// an error), the Claim it returns carries the token it drew, which owns
// the record if the script ran.
func (s *Store) Claim(ctx context.Context, key string, fp idempotency.Fingerprint, lease time.Duration) (idempotency.Claim, error) {
	tok := idempotency.NewToken()
	v, err := claimScript.Run(ctx, s.c, []string{s.RecordKey(key)}, strconv.FormatUint(tok, 10), fp[:], ms(lease)).Slice()
	if err != nil {
		var c idempotency.Claim
		if mayHaveRun(err) {
			c.Token = tok
		}
		return c, fmt.Errorf("unherdredis: claim: %w", err)
	}
	st, _ := v[0].(string)
	switch st {
	case "0":
		return idempotency.Claim{State: idempotency.Acquired, Token: tok}, nil
	case "1", "2":
	default:
		return idempotency.Claim{}, fmt.Errorf("%w: state %q", idempotency.ErrBadRecord, st)
	}
	var c idempotency.Claim
	if len(v) < 2 {
		return c, fmt.Errorf("%w: short reply", idempotency.ErrBadRecord)
	}
	fpv, _ := v[1].(string)
	copy(c.Fingerprint[:], fpv)
	c.State = idempotency.InFlight
	if st == "2" {
		c.State = idempotency.Completed
		data, _ := v[2].(string)
		c.Response = new(idempotency.Response)
		if err := c.Response.UnmarshalBinary([]byte(data)); err != nil {
			return idempotency.Claim{}, err
		}
	}
	return c, nil
}

// mayHaveRun reports whether a script that failed with err may have run:
// unless no connection could be had, or Redis answered with an error.
func mayHaveRun(err error) bool {
	var op *net.OpError
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return false
	case errors.As(err, &op) && op.Op == "dial":
		return false
	case errors.As(err, &rerr):
		return false
	}
	return true
}

func fenced(n int64, err error, op string) error {
	switch {
	case err != nil:
		return fmt.Errorf("unherdredis: %s: %w", op, err)
	case n == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Renew implements idempotency.Store.
func (s *Store) Renew(ctx context.Context, key string, token uint64, lease time.Duration) error {
	n, err := renewScript.Run(ctx, s.c, []string{s.RecordKey(key)}, strconv.FormatUint(token, 10), ms(lease)).Int64()
	return fenced(n, err, "renew")
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key string, token uint64, resp *idempotency.Response, ttl time.Duration) error {
	data, err := resp.MarshalBinary()
	if err != nil {
		return err
	}
	n, err := completeScript.Run(ctx, s.c, []string{s.RecordKey(key)}, strconv.FormatUint(token, 10), data, ms(ttl)).Int64()
	return fenced(n, err, "complete")
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key string, token uint64) error {
	n, err := releaseScript.Run(ctx, s.c, []string{s.RecordKey(key)}, strconv.FormatUint(token, 10)).Int64()
	return fenced(n, err, "release")
}

var _ idempotency.Store = (*Store)(nil)
