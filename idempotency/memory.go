package idempotency

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/unherd/unherd/internal/linked"
)

// Defaults applied to zero fields of [MemoryConfig].
const (
	DefaultShards   = 64
	DefaultMaxBytes = 64 << 20
	// DefaultMaxShare is the part of the store one principal's records
	// may hold: ten principals flooding together fill it.
	DefaultMaxShare = 0.1
	// DefaultMinRetention is how long a completed record is kept however
	// full the store: longer than the retries of any sane client take.
	// unherd's retry package, the AWS SDKs and Stripe's libraries give
	// up within a minute; Google Cloud's generated client libraries give
	// many methods a total retry timeout of 600 s, the longest default
	// horizon in common use.
	DefaultMinRetention = 10 * time.Minute
)

// MemoryConfig configures a [Memory] store. The zero value is 64 shards
// holding at most 64 MiB, a tenth of it at most for one principal's
// recent records, each completed record kept at least 10 minutes.
type MemoryConfig struct {
	// Shards is the number of independently locked parts the keys are
	// spread over. Zero means DefaultShards.
	Shards int

	// MaxBytes bounds the heap the records hold, spread evenly over the
	// shards. Everything a record keeps alive is counted, as the
	// allocator rounds it: the record, its key, its encoded response
	// (headers and body), its slot in the shard's map (a Go map does
	// not shrink: slots are counted as they are filled, and a shard
	// rebuilds its map to reclaim those of deleted records when it needs
	// the room), and the account of each principal holding records. The
	// count is an upper bound: the store holds a little less than
	// MaxBytes of records and the heap it takes stays within MaxBytes.
	//
	// When a shard needs room, it evicts expired records, then the
	// completed records past their MinRetention, the oldest first. It
	// never evicts an in-flight record, nor a completed one within its
	// MinRetention: forgetting it would run a retry of its request
	// again. When a shard has no room for a new claim even so, every
	// record it holds is in flight or recent (a flood of new keys), and
	// Claim fails with an error wrapping ErrStoreFull, which the
	// middleware answers 503 with Retry-After; a completion that does
	// not fit keeps its status but not its body (Response.Omitted), in
	// the room its claim reserved, and is replayed as 409
	// "replay-unavailable". Zero means DefaultMaxBytes.
	MaxBytes int64

	// MinRetention is how long a completed record is kept at least,
	// counted from its completion, whatever the traffic: a retry within
	// it is always replayed. Past it, the record is kept for the rest
	// of its TTL while the store has room, and is among the first
	// evicted when a new key needs room. Choose it longer than the
	// longest retry horizon of the clients (their total time from first
	// attempt to last retry). The store refuses honest traffic only
	// when the records completed within MinRetention fill MaxBytes: size
	// MaxBytes for the rate of new keys times MinRetention. A
	// MinRetention of the TTL or more keeps every completed record for
	// its whole TTL, and a full store then refuses new keys until some
	// expire. Zero means DefaultMinRetention (10 minutes).
	MinRetention time.Duration

	// MaxShare bounds, as a fraction of MaxBytes, the bytes the
	// records of one principal hold while they cannot be evicted (in
	// flight, or completed within MinRetention), so that a principal
	// flooding the store with keys is refused (ErrStoreFull) while the
	// others still find room. The principal is the one WithPrincipal put
	// in the claim's context, which the middleware does when
	// Config.Principal is set. A completion that would take its
	// principal past the share keeps its status only, as one that does
	// not fit the store. A record stops counting against its principal's
	// share once past its MinRetention, when the store next uses its
	// shard: from then on it is evicted like any other's. So one
	// principal's steady traffic is refused only when its records
	// completed within MinRetention fill its share.
	//
	// Claims made without a principal (a middleware without
	// Config.Principal) are not bounded by a share: such a middleware
	// cannot tell its callers apart, and bounding them all as one would
	// only shrink the store; MaxBytes bounds them. Zero means
	// DefaultMaxShare; 1 turns the bound off.
	MaxShare float64
}

// Memory is an in-process Store: records live in a sharded map, expire
// by their lease or TTL, and are bounded in total size (see
// MemoryConfig.MaxBytes) and per principal (MemoryConfig.MaxShare). A
// completed record is kept for its TTL while there is room, and for
// MemoryConfig.MinRetention (10 minutes) whatever the traffic: a new key
// that needs room evicts the oldest completed records past their
// MinRetention, never an in-flight record nor a recent one. So steady
// traffic of any volume within MaxBytes per MinRetention is never
// refused, and a retry within MinRetention is always replayed; a flood
// of new keys that fills the store with recent records is refused
// (ErrStoreFull) until they age past MinRetention, and never makes a
// recent request run again. It serves one process; a fleet of servers
// needs a shared store such as the Redis and PostgreSQL ones of unherd's
// nested modules. The middleware claims its keys until the handler
// returns, with no lease to renew: a record cannot outlive the process
// that would have to renew it. It is safe for concurrent use.
type Memory struct {
	seed   maphash.Seed
	epoch  time.Time // instants are nanoseconds since epoch, on the monotonic clock
	shards []memShard
	accts  []memAccts // the principals holding records, by the hash of their names
	share  int64      // bytes one principal's records may hold
	retain int64      // MinRetention, in nanoseconds
	// ownerBytes counts the principals' entries, taken from every
	// shard's room in equal parts.
	ownerBytes atomic.Int64
	token      atomic.Uint64
}

// memAccts holds the accounts of some of the principals. Its lock is
// taken under a shard's, never the other way round.
type memAccts struct {
	mu         sync.Mutex
	m          map[string]*memOwner
	share      int64         // the Memory's
	ownerBytes *atomic.Int64 // the Memory's
	_          [64]byte      // keeps neighbouring locks off one cache line
}

type memShard struct {
	mu sync.Mutex
	m  map[string]*memRecord
	// Each record is on one of three lists, the oldest first: flight
	// holds the in-flight records by the time of their claim; fresh the
	// completed records within their MinRetention, and aged those past
	// it, both by the time of their completion, which is also the order
	// their retention ends in. A record moves from fresh to aged when its
	// retention ends, as the shard is used (see age), and the head of
	// aged is the first record evicted when the shard needs room.
	flight, fresh, aged memList
	bytes               int64 // counted against max, map slots included
	max                 int64 // bytes this shard may hold
	// slots is the part of bytes that counts the map's slots: one per
	// insertion since the map was last rebuilt, deletions not
	// refunded, as a Go map does not shrink.
	slots int64
	// nextScan is at or before the earliest expiry of any record: a
	// full shard scans all its records for expired ones only after it,
	// and after claims numbering an eighth of its records have been
	// made since the last scan.
	nextScan int64
	claims   int
	_        [64]byte // keeps neighbouring shards' locks off one cache line
}

// memList links records, the oldest at the head.
type memList = linked.List[memRecord, *memRecord]

type memRecord struct {
	linked.Links[memRecord] // on the shard's list for its state

	key string
	// owner is the account the record's size counts against: nil for a
	// claim without a principal, and for a record past its retention.
	owner   *memOwner
	data    []byte // the response, encoded by MarshalBinary; never modified once stored
	fp      Fingerprint
	token   uint64
	expires int64
	// retained is when a completed record's retention ends: at its
	// MinRetention after completion, or its expiry if sooner.
	retained int64
	size     int64 // bytes counted for the record, its key and data
	state    State // InFlight or Completed
	aged     bool  // completed, and on its shard's aged list
}

type memOwner struct {
	accts *memAccts // whose lock guards bytes
	name  string
	bytes int64 // of its records' sizes
}

// Bytes counted for what every record, and every principal, holds.
var (
	recordCost = allocSize(int(unsafe.Sizeof(memRecord{})))
	ownerCost  = allocSize(int(unsafe.Sizeof(memOwner{})))
	// omittedCost is the data of a completion that keeps its status
	// only; a claim reserves it, so that its completion always fits.
	omittedCost = func() int64 {
		b, _ := (&Response{Status: 999, Omitted: true}).MarshalBinary()
		return allocSize(cap(b))
	}()
)

// slotCost bounds the bytes a map slot (a string key and a pointer,
// with its control byte) takes: a growing Go map fills at least 7/16 of
// its slots, and the allocator rounds its tables up.
const slotCost = 64

// ownerSize is what a principal's entry holds: the entry, its name, and
// two map slots, as the map of the entries is not rebuilt but reuses the
// slots of deleted entries once they are a tenth of it.
func ownerSize(name string) int64 {
	return ownerCost + allocSize(len(name)) + 2*slotCost
}

// sizeClasses are the sizes the Go allocator rounds a small object up
// to (those of the runtime's size class table).
var sizeClasses = [...]uint16{16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the bytes the allocator takes for an object of n bytes:
// a small one is rounded up to its size class (16 bytes at least, which
// also covers the tiny objects packed together), a large one to whole
// 8 KiB pages.
func allocSize(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n > 32<<10:
		return (int64(n) + 8<<10 - 1) &^ (8<<10 - 1)
	}
	i, _ := slices.BinarySearch(sizeClasses[:], uint16(n))
	return int64(sizeClasses[i])
}

// NewMemory returns an empty Memory store.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	switch {
	case cfg.Shards < 0:
		return nil, fmt.Errorf("idempotency: MemoryConfig.Shards %d is negative; use 0 for %d", cfg.Shards, DefaultShards)
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("idempotency: MemoryConfig.MaxBytes %d is negative; use 0 for %d", cfg.MaxBytes, DefaultMaxBytes)
	case !(cfg.MaxShare >= 0 && cfg.MaxShare <= 1): // NaN too
		return nil, fmt.Errorf("idempotency: MemoryConfig.MaxShare %v is not a fraction from 0 to 1; use 0 for %v, 1 for no bound", cfg.MaxShare, DefaultMaxShare)
	case cfg.MinRetention < 0:
		return nil, fmt.Errorf("idempotency: MemoryConfig.MinRetention %v is negative; use 0 for %v", cfg.MinRetention, DefaultMinRetention)
	}
	n := cmp.Or(cfg.Shards, DefaultShards)
	total := cmp.Or(cfg.MaxBytes, DefaultMaxBytes)
	m := &Memory{
		seed:   maphash.MakeSeed(),
		epoch:  time.Now(),
		shards: make([]memShard, n),
		accts:  make([]memAccts, n),
		share:  int64(cmp.Or(cfg.MaxShare, DefaultMaxShare) * float64(total)),
		retain: int64(cmp.Or(cfg.MinRetention, DefaultMinRetention)),
	}
	limit := max(total/int64(n), 1)
	for i := range m.shards {
		s := &m.shards[i]
		s.m = make(map[string]*memRecord)
		s.max = limit
		s.nextScan = math.MaxInt64
		m.accts[i] = memAccts{m: make(map[string]*memOwner), share: m.share, ownerBytes: &m.ownerBytes}
	}
	return m, nil
}

func (m *Memory) shard(key string) *memShard {
	return &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]
}

// now returns the instant, in nanoseconds since the store's epoch.
func (m *Memory) now() int64 { return int64(time.Since(m.epoch)) }

// after returns the instant d after now, saturating.
func after(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}

// Claim implements Store. A new claim that finds no room fails with an
// error wrapping ErrStoreFull; a principal named by WithPrincipal in ctx
// has room up to its share (MemoryConfig.MaxShare).
func (m *Memory) Claim(ctx context.Context, key string, fp Fingerprint, lease time.Duration) (Claim, error) {
	principal, scoped := PrincipalFromContext(ctx)
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	s.claims++
	s.sweep(now, 2)
	if r, ok := s.m[key]; ok {
		if now < r.expires {
			c := Claim{State: r.state, Fingerprint: r.fp}
			data := r.data
			s.mu.Unlock()
			if c.State == Completed {
				// data is never modified once stored: decode it unlocked.
				c.Response = new(Response)
				if err := c.Response.UnmarshalBinary(data); err != nil {
					return Claim{}, err
				}
			}
			return c, nil
		}
		s.remove(r)
	}
	defer s.mu.Unlock()
	size := recordCost + allocSize(len(key)) + omittedCost
	o, err := m.room(s, size, principal, scoped, now)
	if err != nil {
		return Claim{}, err
	}
	// The key is copied: the caller's string may share its memory with
	// more than the key (a header line), which the store would keep.
	r := &memRecord{key: strings.Clone(key), owner: o, fp: fp, token: m.token.Add(1), expires: after(now, lease), state: InFlight}
	s.m[r.key] = r
	s.bytes += slotCost + size
	s.slots += slotCost
	r.size = size
	s.flight.Push(r)
	return Claim{State: Acquired, Token: r.token}, nil
}

// room makes room in s for a new record of size bytes (see makeRoom), and
// counts them against the principal's share, making room in the share
// by ending the retention of the records past it. It returns the
// principal's account, nil if none.
func (m *Memory) room(s *memShard, size int64, principal string, scoped bool, now int64) (*memOwner, error) {
	if !m.makeRoom(s, size+slotCost, now) {
		return nil, fmt.Errorf("%w: its in-flight and recent records take all %d bytes of a shard; retry once some are past their retention", ErrStoreFull, s.max)
	}
	if !scoped {
		return nil, nil
	}
	if o := m.take(principal, size); o != nil {
		return o, nil
	}
	s.age(now, math.MaxInt)
	s.reclaim(now)
	if o := m.take(principal, size); o != nil {
		return o, nil
	}
	return nil, fmt.Errorf("%w: this caller's in-flight and recent records take its share of the store (%d bytes); retry once some are past their retention", ErrStoreFull, m.share)
}

// fits reports whether n more bytes fit in s.
func (m *Memory) fits(s *memShard, n int64) bool {
	return s.bytes+n+m.ownerBytes.Load()/int64(len(m.shards)) <= s.max
}

// makeRoom makes room in s for n more bytes, if need be by evicting
// expired records, reclaiming the map's slots of deleted ones, and
// evicting the oldest completed records past their retention, in that
// order; it reports whether n bytes fit.
func (m *Memory) makeRoom(s *memShard, n, now int64) bool {
	if m.fits(s, n) {
		return true
	}
	s.reclaim(now)
	for !m.fits(s, n) {
		if !s.evict(now) {
			return false
		}
	}
	return true
}

func (m *Memory) accounts(principal string) *memAccts {
	return &m.accts[maphash.String(m.seed, principal)%uint64(len(m.accts))]
}

// take counts n more bytes against the principal's share, creating its
// account if it has none, and returns the account; nil if they do not
// fit in the share.
func (m *Memory) take(principal string, n int64) *memOwner {
	a := m.accounts(principal)
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.m[principal]
	if o == nil {
		if n > m.share {
			return nil
		}
		o = &memOwner{accts: a, name: strings.Clone(principal)}
		a.m[o.name] = o
		m.ownerBytes.Add(ownerSize(o.name))
	}
	if o.bytes+n > m.share {
		return nil
	}
	o.bytes += n
	return o
}

// add counts n bytes more, or fewer, against o's share, and deletes the
// account when it holds nothing; it reports false, and counts nothing,
// when they do not fit. A nil o has no share.
func (o *memOwner) add(n int64) bool {
	if o == nil {
		return true
	}
	a := o.accts
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > 0 && o.bytes+n > a.share {
		return false
	}
	o.bytes += n
	if o.bytes == 0 {
		delete(a.m, o.name)
		a.ownerBytes.Add(-ownerSize(o.name))
	}
	return true
}

// owned returns the live record token owns, under s.mu; with inFlight,
// only if it is still in flight.
func (s *memShard) owned(key string, token uint64, now int64, inFlight bool) (*memRecord, error) {
	r, ok := s.m[key]
	if !ok || r.token != token || now >= r.expires || inFlight && r.state != InFlight {
		return nil, ErrLeaseLost
	}
	return r, nil
}

// Renew implements Store.
func (m *Memory) Renew(_ context.Context, key string, token uint64, lease time.Duration) error {
	now := m.now()
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.owned(key, token, now, true)
	if err != nil {
		return err
	}
	r.expires = after(now, lease)
	s.nextScan = min(s.nextScan, r.expires)
	return nil
}

// Complete implements Store. A response that does not fit the store, or
// its principal's share, is kept as its status only (Response.Omitted).
func (m *Memory) Complete(_ context.Context, key string, token uint64, resp *Response, ttl time.Duration) error {
	data, _ := resp.MarshalBinary() // encoded outside the lock
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read under the lock, so that records complete in the order of
	// their instants, and their retention ends in the order of the list.
	now := m.now()
	r, err := s.owned(key, token, now, false)
	if err != nil {
		return err
	}
	base := recordCost + allocSize(len(key))
	size := base + allocSize(cap(data))
	if d := size - r.size; d > 0 && !(m.makeRoom(s, d, now) && (r.owner.add(d) || s.age(now, math.MaxInt) > 0 && r.owner.add(d))) {
		// The claim reserved room for this.
		data, _ = (&Response{Status: resp.Status, Omitted: true}).MarshalBinary()
		size = base + allocSize(cap(data))
		r.owner.add(size - r.size) // not positive
	} else if d <= 0 {
		r.owner.add(d)
	}
	s.bytes += size - r.size
	r.size = size
	s.list(r).Remove(r)
	r.state, r.data, r.expires = Completed, data, after(now, ttl)
	r.retained, r.aged = min(after(now, time.Duration(m.retain)), r.expires), false
	s.fresh.Push(r)
	s.nextScan = min(s.nextScan, r.expires)
	return nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, key string, token uint64) error {
	s := m.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.owned(key, token, m.now(), true)
	if err != nil {
		return err
	}
	s.remove(r)
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

// list returns the list r is on.
func (s *memShard) list(r *memRecord) *memList {
	switch {
	case r.state == InFlight:
		return &s.flight
	case r.aged:
		return &s.aged
	}
	return &s.fresh
}

// remove deletes r, and its owner's account when r was the owner's last
// record. Its map slot stays counted until the map is rebuilt.
func (s *memShard) remove(r *memRecord) {
	s.list(r).Remove(r)
	delete(s.m, r.key)
	s.bytes -= r.size
	if r.owner != nil {
		r.owner.add(-r.size)
	}
}

// age ends the retention of up to n of the oldest completed records
// whose retention is over: they move to the aged list and stop counting
// against their principals' shares. It returns how many it moved.
func (s *memShard) age(now int64, n int) int {
	moved := 0
	for ; moved < n; moved++ {
		r := s.fresh.Head()
		if r == nil || now < r.retained {
			break
		}
		s.fresh.Remove(r)
		if r.owner != nil {
			r.owner.add(-r.size)
			r.owner = nil
		}
		r.aged = true
		s.aged.Push(r)
	}
	return moved
}

// evict deletes the oldest completed record past its retention, and
// reports whether there was one.
func (s *memShard) evict(now int64) bool {
	if s.aged.Head() == nil && s.age(now, 1) == 0 {
		return false
	}
	s.remove(s.aged.Head())
	return true
}

// reclaim makes room in a full shard: it evicts the expired records
// found among the oldest or, when one may have expired elsewhere and
// enough claims came since the last look, among all; and it rebuilds the
// map when the slots counted for deleted records number a quarter of
// the live ones or more.
func (s *memShard) reclaim(now int64) {
	s.sweep(now, 64)
	if now >= s.nextScan && s.claims >= len(s.m)/8 {
		s.claims = 0
		next := int64(math.MaxInt64)
		for _, r := range s.m {
			if now >= r.expires {
				s.remove(r) // deleting during range is allowed
			} else {
				next = min(next, r.expires)
			}
		}
		s.nextScan = next
	}
	if live := int64(len(s.m)) * slotCost; s.slots > live && s.slots-live >= live/4 {
		m := make(map[string]*memRecord, len(s.m))
		for k, r := range s.m {
			m[k] = r
		}
		s.m = m
		s.bytes -= s.slots - live
		s.slots = live
	}
}

// sweep evicts up to n expired records from the head of each list, and
// ends the retention of up to n completed records whose retention is
// over: the oldest are the first to expire (exactly so when every record
// has one TTL, and in flight, one lease).
func (s *memShard) sweep(now int64, n int) {
	s.age(now, n)
	for _, l := range []*memList{&s.aged, &s.flight} {
		for i := 0; i < n && l.Head() != nil && now >= l.Head().expires; i++ {
			s.remove(l.Head())
		}
	}
}
