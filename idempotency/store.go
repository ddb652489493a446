package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Store keeps idempotency records. A record is created in flight by Claim,
// holding a lease that Renew extends; Complete turns it into a completed
// record holding the response, kept for a TTL; Release deletes an
// in-flight record so that the key can be claimed again.
//
// Every record carries the fencing token its claim drew: Renew, Complete
// and Release act only when the token still owns the record and its lease
// has not expired, and return ErrLeaseLost otherwise, so a process whose
// lease expired cannot overwrite the record of the process that claimed
// the key after it. An in-flight record whose lease expired is treated as
// absent: the next Claim takes it over with a new token, whatever its
// fingerprint.
//
// Implementations must be safe for concurrent use, and Claim must be
// atomic across every process sharing the store: of concurrent claims of
// an absent key, exactly one returns Acquired. Package storetest checks a
// Store against this contract.
type Store interface {
	// Claim creates an in-flight record for key with fingerprint fp and a
	// lease of the given length, unless a live record exists. It returns
	// Acquired and the new token, or the existing record's state and
	// fingerprint (and, when Completed, its response).
	//
	// When Claim fails after the claim may have taken effect (its
	// context ended, or the connection broke, while the claim was on its
	// way or its answer on the way back), it returns the token it drew
	// in Claim.Token with the error, so that the caller can release a
	// record it may own but does not know of; a zero Token says the claim
	// did not take effect.
	Claim(ctx context.Context, key string, fp Fingerprint, lease time.Duration) (Claim, error)
	// Renew extends the lease of the in-flight record that token owns to
	// lease from now.
	Renew(ctx context.Context, key string, token uint64, lease time.Duration) error
	// Complete stores resp as the record's outcome, to be kept for ttl.
	// It succeeds again if called twice with the same token. It must not
	// keep resp, its Header or its Body after it returns: the middleware
	// reuses them (MarshalBinary makes a copy to keep).
	Complete(ctx context.Context, key string, token uint64, resp *Response, ttl time.Duration) error
	// Release deletes the in-flight record that token owns.
	Release(ctx context.Context, key string, token uint64) error
}

// NewToken draws a random, non-zero fencing token, for stores that have
// no counter of their own: a stale owner's token equals its successor's
// with probability 2^-64.
func NewToken() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails; see crypto/rand.Read
		if t := binary.LittleEndian.Uint64(b[:]); t != 0 {
			return t
		}
	}
}

// State is the state of a record as Claim found it.
type State uint8

// States a Claim reports.
const (
	// Acquired: the caller now owns a new in-flight record.
	Acquired State = iota + 1
	// InFlight: another request holds a live lease on the key.
	InFlight
	// Completed: the key's request finished; its response is stored.
	Completed
)

func (s State) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case InFlight:
		return "in flight"
	case Completed:
		return "completed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Claim is the outcome of Store.Claim.
type Claim struct {
	State State
	// Token is the fencing token of an Acquired claim.
	Token uint64
	// Fingerprint is the existing record's, for InFlight and Completed.
	Fingerprint Fingerprint
	// Response is the stored response, for Completed.
	Response *Response
}

// Fingerprint identifies what a request asks for: a SHA-256 over its
// method, path and query, chosen headers and body.
type Fingerprint [sha256.Size]byte

// Errors of stores.
var (
	// ErrLeaseLost: the token no longer owns the record (its lease
	// expired, or another claim took the key over).
	ErrLeaseLost = errors.New("idempotency: lease lost")
	// ErrStoreFull: a bounded store has no room for another record, or
	// none within the share of the principal the claim is made for. The
	// middleware answers 503 (CodeStoreFull), even with FailOpen.
	ErrStoreFull = errors.New("idempotency: store full")
	// ErrBadRecord: a stored record could not be decoded.
	ErrBadRecord = errors.New("idempotency: bad record")
)

// Response is a stored response: what a replay sends back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Omitted reports that the body was larger than the middleware's
	// MaxResponseBody and was not kept: a replay answers 409 with a
	// problem saying so instead of a truncated copy.
	Omitted bool
}

// Size is an estimate of the bytes the response holds, for bounded
// stores.
func (r *Response) Size() int {
	n := 16 + len(r.Body)
	for k, vs := range r.Header {
		n += len(k) + 16
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	return n
}

const responseVersion = 1

// MarshalBinary encodes the response in the compact form stores keep.
func (r *Response) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, r.Size()+8)
	b = append(b, responseVersion)
	flags := byte(0)
	if r.Omitted {
		flags = 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = binary.AppendUvarint(b, uint64(len(r.Header)))
	for k, vs := range r.Header {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return append(b, r.Body...), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// UnmarshalBinary decodes what MarshalBinary encoded. Errors wrap
// ErrBadRecord.
func (r *Response) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	if v := d.byte(); v != responseVersion {
		return fmt.Errorf("%w: version %d", ErrBadRecord, v)
	}
	flags := d.byte()
	status := d.uvarint()
	nh := d.uvarint()
	if nh > uint64(len(b)) {
		d.fail()
	}
	var h http.Header
	if nh > 0 && d.err == nil {
		h = make(http.Header, nh)
	}
	for i := uint64(0); i < nh && d.err == nil; i++ {
		k := d.string()
		nv := d.uvarint()
		if nv > uint64(len(b)) {
			d.fail()
			break
		}
		vs := make([]string, 0, nv)
		for j := uint64(0); j < nv && d.err == nil; j++ {
			vs = append(vs, d.string())
		}
		h[k] = vs
	}
	if d.err != nil || status > 999 {
		return fmt.Errorf("%w: truncated or corrupt", ErrBadRecord)
	}
	*r = Response{Status: int(status), Header: h, Body: append([]byte(nil), d.b...), Omitted: flags&1 != 0}
	return nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = ErrBadRecord, nil }

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
