package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
	"github.com/unherd/unherd/unherdpg"
	"github.com/unherd/unherd/unherdredis"
)

func init() {
	addCommand(command{
		name:     "demo",
		synopsis: demoSynopsis,
		summary:  "start a payments server on loopback that drops a share of its responses after the charge commits, pay through unherd's HTTP client with and without idempotency keys, and count the charges (memory store, or Redis or PostgreSQL on loopback)",
		run:      (*env).demo,
	})
}

// demoSynopsis is the demo command's usage line after "unherd ".
const demoSynopsis = "demo payments [--payments N] [--drop P] [--seed N] [--redis ADDR | --postgres DSN]"

// demoLedger is where the demo server keeps its records and its charges.
type demoLedger struct {
	store idempotency.Store
	what  string // for the header line
	// charge records one charge of payment and returns the response.
	charge func(ctx context.Context, payment string) (*idempotency.Response, error)
	// charges returns the number of charges of each payment.
	charges func(ctx context.Context) (map[string]int, error)
	close   func()
}

func (e *env) demo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo payments", flag.ContinueOnError)
	n := fs.Int("payments", 1000, "how many payments to make in each run, 1 to 100000")
	drop := fs.Float64("drop", 0.08, "share of the server's responses dropped after the charge commits, 0 to 0.5")
	seed := fs.Uint64("seed", 1, "seed of the draws that pick the dropped responses")
	redisAddr := fs.String("redis", "", "keep the idempotency records in the Redis at this loopback `address` (host:port)")
	pgDSN := fs.String("postgres", "", "keep the records and the charges in the PostgreSQL at this loopback `DSN`")
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		return e.parse(fs, args[:1], "unherd "+demoSynopsis) // prints the usage
	case len(args) == 0 || args[0] != "payments":
		return usagef("demo: want 'demo payments', the one demo there is ('unherd demo -h' lists its flags)")
	}
	if err := e.parse(fs, args[1:], "unherd "+demoSynopsis); err != nil {
		return err
	}
	switch {
	case *n < 1 || *n > 100000:
		return usagef("demo payments: --payments %d is outside 1 to 100000", *n)
	case !(*drop >= 0 && *drop <= 0.5):
		return usagef("demo payments: --drop %v is outside 0 to 0.5", *drop)
	case *redisAddr != "" && *pgDSN != "":
		return usagef("demo payments: give --redis or --postgres, not both")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var (
		l   *demoLedger
		err error
	)
	switch {
	case *redisAddr != "":
		l, err = redisLedger(ctx, *redisAddr)
	case *pgDSN != "":
		l, err = postgresLedger(ctx, *pgDSN)
	default:
		l = memoryLedger()
	}
	if err != nil {
		return fmt.Errorf("demo payments: %w", err)
	}
	defer l.close()

	srv, err := startDemoServer(l, *drop, *seed)
	if err != nil {
		return fmt.Errorf("demo payments: %w", err)
	}
	defer srv.close()
	fmt.Fprintf(e.stdout, "A payments server on %s charges a card once per request it serves; %.0f%% of its responses are dropped after the charge commits (seed %d, %s).\n",
		srv.addr, *drop*100, *seed, l.what)
	fmt.Fprintf(e.stdout, "The client is unherdhttp's Transport; the caller sends a payment again whenever it got no answer.\n\n")

	run := newRunID()
	without, err := payAll(ctx, srv, l, *n, "nokey-"+run, false)
	if err != nil {
		return fmt.Errorf("demo payments: %w", err)
	}
	with, err := payAll(ctx, srv, l, *n, "key-"+run, true)
	if err != nil {
		return fmt.Errorf("demo payments: %w", err)
	}
	fmt.Fprintf(e.stdout, "%s payments: %s charges without keys, %s with\n", commas(*n), commas(without.charges), commas(with.charges))
	for _, r := range []struct {
		name string
		demoRun
	}{{"without keys", without}, {"with keys   ", with}} {
		fmt.Fprintf(e.stdout, "  %s: %s requests served, %s responses dropped (%s sent again by the caller, %s retried by the Transport, %s payments left without an answer after 10 sends), %s replayed; %s payments charged more than once, %s not at all\n",
			r.name, commas(r.served), commas(r.dropped), commas(r.resent), commas(r.retried), commas(r.unanswered), commas(r.replayed), commas(r.twice), commas(r.never))
	}
	return nil
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// demoServer is the payments server, on a loopback port.
type demoServer struct {
	addr string
	srv  *http.Server

	mu      sync.Mutex
	rng     *mrand.Rand
	drop    float64
	served  int
	dropped int
}

func startDemoServer(l *demoLedger, drop float64, seed uint64) (*demoServer, error) {
	m, err := idempotency.New(idempotency.Config{Store: l.store, TTL: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &demoServer{addr: ln.Addr().String(), drop: drop, rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	charge := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payment, _ := io.ReadAll(io.LimitReader(r.Body, 256))
		resp, err := l.charge(context.WithoutCancel(r.Context()), string(payment))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		resp.Send(w)
	}))
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedResponse{h: make(http.Header), status: http.StatusOK}
		charge.ServeHTTP(rec, r)
		s.mu.Lock()
		s.served++
		lose := s.rng.Float64() < s.drop
		if lose {
			s.dropped++
		}
		s.mu.Unlock()
		if lose {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		for k, vs := range rec.h {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *demoServer) close() { _ = s.srv.Close() }

// counts returns and resets the served and dropped counts.
func (s *demoServer) counts() (served, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	served, dropped = s.served, s.dropped
	s.served, s.dropped = 0, 0
	return served, dropped
}

type bufferedResponse struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.h }
func (b *bufferedResponse) WriteHeader(code int)        { b.status = code }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// demoRun is what one run of payments came to.
type demoRun struct {
	charges, served, dropped, replayed, twice, never int
	// resent counts the caller's sends after one that got no answer,
	// retried the Transport's own retries (of keyed requests, which it
	// may send again), unanswered the payments that got no answer in 10
	// sends: every dropped response is one of the three.
	resent, retried, unanswered int
}

// payAll makes n payments one after another, each sent again by the
// caller (up to 10 times) while no answer comes back; with keys, each
// payment carries a key of its own, the same on every send.
func payAll(ctx context.Context, s *demoServer, l *demoLedger, n int, prefix string, keys bool) (demoRun, error) {
	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{
		Retry: retry.Config{Backoff: backoff.Schedule{Base: time.Millisecond, Cap: 10 * time.Millisecond}},
	})
	if err != nil {
		return demoRun{}, err
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var r demoRun
	for i := range n {
		payment := prefix + "-" + strconv.Itoa(i)
		answered := false
		for try := 0; try < 10; try++ {
			if try > 0 {
				r.resent++
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/charges", strings.NewReader(payment))
			if err != nil {
				return r, err
			}
			if keys {
				req.Header.Set(idempotency.KeyHeader, `"`+payment+`"`)
			}
			resp, err := client.Do(req)
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			if err != nil {
				continue // no answer: send the payment again
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answered = true
			if resp.StatusCode == http.StatusCreated {
				if resp.Header.Get(idempotency.ReplayedHeader) == "true" {
					r.replayed++
				}
				break
			}
		}
		if !answered {
			r.unanswered++
		}
	}
	r.served, r.dropped = s.counts()
	r.retried = r.served - n - r.resent
	got, err := l.charges(ctx)
	if err != nil {
		return r, err
	}
	for i := range n {
		c := got[prefix+"-"+strconv.Itoa(i)]
		r.charges += c
		switch {
		case c == 0:
			r.never++
		case c > 1:
			r.twice++
		}
	}
	return r, nil
}

func memoryLedger() *demoLedger {
	var mu sync.Mutex
	charged := map[string]int{}
	store, _ := idempotency.NewMemory(idempotency.MemoryConfig{}) // the zero config is valid
	return &demoLedger{
		store: store, what: "memory store",
		charge: func(_ context.Context, payment string) (*idempotency.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			charged[payment]++
			return &idempotency.Response{Status: http.StatusCreated, Body: []byte("charged " + payment)}, nil
		},
		charges: func(context.Context) (map[string]int, error) {
			mu.Lock()
			defer mu.Unlock()
			out := make(map[string]int, len(charged))
			for k, v := range charged {
				out[k] = v
			}
			return out, nil
		},
		close: func() {},
	}
}

// errNotLoopback refuses a service address off this machine.
var errNotLoopback = errors.New("the demo talks to loopback addresses only")

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redisLedger keeps the records in Redis under a prefix of the run's own
// and the charges in memory.
func redisLedger(ctx context.Context, addr string) (*demoLedger, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--redis %q: %w", addr, err)
	}
	if !loopback(host) {
		return nil, fmt.Errorf("--redis %q: %w", addr, errNotLoopback)
	}
	redis.SetLogger(quietRedis{}) // the demo reports what fails itself
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("the Redis at %s: %w", addr, err)
	}
	l := memoryLedger()
	l.store = unherdredis.NewStore(c, unherdredis.StoreConfig{Prefix: "unherd:demo:" + newRunID() + ":"})
	l.what = "records in Redis at " + addr
	l.close = func() { _ = c.Close() }
	return l, nil
}

// quietRedis drops go-redis's log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// postgresLedger keeps the records and the charges in a schema of the
// run's own, dropped at the end; a charge commits with its record.
func postgresLedger(ctx context.Context, dsn string) (*demoLedger, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--postgres: %w", err)
	}
	if h := cfg.ConnConfig.Host; !loopback(h) && !strings.HasPrefix(h, "/") {
		return nil, fmt.Errorf("--postgres host %q: %w", h, errNotLoopback)
	}
	cfg.MaxConns = 4
	pool, err := unherdpg.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL: %w", err)
	}
	schema := "unherd_demo_" + newRunID()
	table := pgx.Identifier{schema, "charges"}.Sanitize()
	store := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	drop := func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}
	_, err = pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; CREATE TABLE "+table+" (payment text NOT NULL)")
	if err == nil {
		err = store.EnsureSchema(ctx)
	}
	if err != nil {
		drop()
		pool.Close()
		return nil, fmt.Errorf("the PostgreSQL: %w", err)
	}
	return &demoLedger{
		store: store, what: "records and charges in PostgreSQL, committed together",
		charge: func(ctx context.Context, payment string) (*idempotency.Response, error) {
			return store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
				if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (payment) VALUES ($1)", payment); err != nil {
					return nil, err
				}
				return &idempotency.Response{Status: http.StatusCreated, Body: []byte("charged " + payment)}, nil
			})
		},
		charges: func(ctx context.Context) (map[string]int, error) {
			rows, err := pool.Query(ctx, "SELECT payment, count(*) FROM "+table+" GROUP BY payment")
			if err != nil {
				return nil, err
			}
			out := map[string]int{}
			for rows.Next() {
				var p string
				var c int
				if err := rows.Scan(&p, &c); err != nil {
					return nil, err
				}
				out[p] = c
			}
			return out, rows.Err()
		},
		close: func() { drop(); pool.Close() },
	}, nil
}

// commas writes n with thousands separators: 1,083.
func commas(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
