package idempotency

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied to zero fields of [MemoryConfig].
const (
	DefaultShards   = 64
	DefaultMaxBytes = 64 << 20
)

// MemoryConfig configures a [Memory] store. The zero value is 64 shards
// holding at most 64 MiB.
type MemoryConfig struct {
	// Shards is the number of independently locked parts the keys are
	// spread over. Zero means DefaultShards.
	Shards int
	// MaxBytes bounds the memory the records hold, keys, headers and
	// bodies counted, spread evenly over the shards. When a shard is
	// full, its oldest completed and expired records are evicted first;
	// a completed record that still does not fit keeps its status but
	// not its body (Response.Omitted), and a claim that does not fit
	// fails with ErrStoreFull. Zero means DefaultMaxBytes.
	MaxBytes int64
}

// Memory is an in-process Store: records live in a sharded map, expire
// by their lease or TTL (evicted lazily as the shard is used), and are
// bounded in total size. It serves one process; a fleet of servers needs
// a shared store such as the Redis and PostgreSQL ones of unherd's nested
// modules. The middleware claims its keys until the handler returns, with
// no lease to renew: a record cannot outlive the process that would have
// to renew it. It is safe for concurrent use.
type Memory struct {
	seed   maphash.Seed
	shards []memShard
	token  atomic.Uint64
}

type memShard struct {
	mu    sync.Mutex
	m     map[string]memRecord // values without pointers but data, so that the collector has little to scan
	fifo  []fifoEntry          // records by age, with stale entries
	head  int
	bytes int64
	gen   uint64 // numbers insertions, so that stale fifo entries are told apart
	// nextSweep is when the oldest live completed record expires: no
	// sweep is needed before.
	nextSweep time.Time
	max       int64    // bytes this shard may hold
	_         [64]byte // keeps neighbouring shards' locks off one cache line
}

type fifoEntry struct {
	key string
	gen uint64
}

type memRecord struct {
	state   State // InFlight or Completed
	token   uint64
	gen     uint64
	fp      Fingerprint
	data    []byte // the response, encoded by MarshalBinary
	expires time.Time
	size    int64
}

// NewMemory returns an empty Memory store.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	switch {
	case cfg.Shards < 0:
		return nil, fmt.Errorf("idempotency: MemoryConfig.Shards %d is negative; use 0 for %d", cfg.Shards, DefaultShards)
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("idempotency: MemoryConfig.MaxBytes %d is negative; use 0 for %d", cfg.MaxBytes, DefaultMaxBytes)
	}
	n := cmp.Or(cfg.Shards, DefaultShards)
	m := &Memory{seed: maphash.MakeSeed(), shards: make([]memShard, n)}
	limit := max(cmp.Or(cfg.MaxBytes, DefaultMaxBytes)/int64(n), 1)
	for i := range m.shards {
		m.shards[i].m = make(map[string]memRecord)
		m.shards[i].max = limit
	}
	return m, nil
}

func (m *Memory) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]
}

const recordOverhead = 160

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, key string, fp Fingerprint, lease time.Duration) (Claim, error) {
	now := time.Now()
	s := m.shard(key)
	s.mu.Lock()
	s.sweep(now, 2)
	if r, ok := s.m[key]; ok {
		if now.Before(r.expires) {
			s.mu.Unlock()
			c := Claim{State: r.state, Fingerprint: r.fp}
			if r.state == Completed {
				// data is never modified once stored: decode it unlocked.
				c.Response = new(Response)
				if err := c.Response.UnmarshalBinary(r.data); err != nil {
					return Claim{}, err
				}
			}
			return c, nil
		}
		s.remove(key, r)
	}
	defer s.mu.Unlock()
	size := int64(len(key) + recordOverhead)
	if !s.fit(size, now) {
		return Claim{}, ErrStoreFull
	}
	r := memRecord{state: InFlight, token: m.token.Add(1), fp: fp, expires: now.Add(lease), size: size}
	s.insert(key, r)
	return Claim{State: Acquired, Token: r.token}, nil
}

// owned returns the live record token owns, under s.mu; with inFlight,
// only if it is still in flight.
func (s *memShard) owned(key string, token uint64, now time.Time, inFlight bool) (memRecord, error) {
	r, ok := s.m[key]
	if !ok || r.token != token || !now.Before(r.expires) || inFlight && r.state != InFlight {
		return memRecord{}, ErrLeaseLost
	}
	return r, nil
}

// Renew implements Store.
func (m *Memory) Renew(_ context.Context, key string, token uint64, lease time.Duration) error {
	now := time.Now()
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.owned(key, token, now, true)
	if err != nil {
		return err
	}
	r.expires = now.Add(lease)
	s.m[key] = r
	return nil
}

// Complete implements Store.
func (m *Memory) Complete(_ context.Context, key string, token uint64, resp *Response, ttl time.Duration) error {
	data, _ := resp.MarshalBinary() // encoded outside the lock
	now := time.Now()
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.owned(key, token, now, false)
	if err != nil {
		return err
	}
	s.bytes -= r.size // the record is replaced in place below
	size := int64(len(key)+recordOverhead) + int64(len(data))
	if !s.fit(size, now) {
		data, _ = (&Response{Status: resp.Status, Omitted: true}).MarshalBinary()
		size = int64(len(key)+recordOverhead) + int64(len(data))
	}
	r.state, r.data, r.size, r.expires = Completed, data, size, now.Add(ttl)
	s.insert(key, r)
	return nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, key string, token uint64) error {
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.owned(key, token, time.Now(), true)
	if err != nil {
		return err
	}
	s.remove(key, r)
	return nil
}

// Len reports the number of records held, expired ones not yet evicted
// included.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

func (s *memShard) insert(key string, r memRecord) {
	s.gen++
	r.gen = s.gen
	s.m[key] = r
	s.bytes += r.size
	s.fifo = append(s.fifo, fifoEntry{key, r.gen})
}

func (s *memShard) remove(key string, r memRecord) {
	delete(s.m, key)
	s.bytes -= r.size
}

// fit evicts records, oldest first, until size more bytes fit; in-flight
// records with a live lease are kept. It reports whether they fit.
func (s *memShard) fit(size int64, now time.Time) bool {
	for n := s.live(); s.bytes+size > s.max && n > 0; n-- {
		e := s.pop()
		r, ok := s.m[e.key]
		if !ok || r.gen != e.gen {
			continue
		}
		if r.state == InFlight && now.Before(r.expires) {
			s.fifo = append(s.fifo, e)
			continue
		}
		s.remove(e.key, r)
	}
	return s.bytes+size <= s.max
}

// sweep looks at up to n of the oldest entries and evicts the expired.
// It stops at the oldest completed record that is still live and skips
// the work until that record expires: records are queued about in the
// order they expire (exactly so when every record has one TTL).
func (s *memShard) sweep(now time.Time, n int) {
	if now.Before(s.nextSweep) {
		return
	}
	for ; n > 0 && s.live() > 0; n-- {
		e := s.fifo[s.head]
		r, ok := s.m[e.key]
		switch {
		case !ok || r.gen != e.gen:
			s.pop()
		case !now.Before(r.expires):
			s.pop()
			s.remove(e.key, r)
		case r.state == InFlight:
			s.fifo = append(s.fifo, s.pop())
		default:
			s.nextSweep = r.expires
			return
		}
	}
}

func (s *memShard) live() int { return len(s.fifo) - s.head }

func (s *memShard) pop() fifoEntry {
	e := s.fifo[s.head]
	s.fifo[s.head] = fifoEntry{}
	s.head++
	if s.head > 64 && s.head*2 > len(s.fifo) {
		n := copy(s.fifo, s.fifo[s.head:])
		clear(s.fifo[n:])
		s.fifo = s.fifo[:n]
		s.head = 0
	}
	return e
}
