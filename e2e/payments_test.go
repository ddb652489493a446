package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/idempotency"
	"github.com/unherd/unherd/internal/services"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/toxitest"
	"github.com/unherd/unherd/unherdhttp"
	"github.com/unherd/unherd/unherdpg"
	"github.com/unherd/unherd/unherdredis"
)

// The load and its faults.
const (
	payments    = 300
	workers     = 16
	dupEvery    = 10 // payment n%dupEvery == 0 is sent twice at once, with one key of the caller's
	loseEvery   = 4  // the first response of payment n%loseEvery == 1 is lost after the charge
	slowEvery   = 7  // the first attempt of payment n%slowEvery == 2 outlives the client's attempt timeout
	slowFor     = 600 * time.Millisecond
	attemptTime = 400 * time.Millisecond
)

// charger is how a server records a charge: with its idempotency record
// in one transaction (PostgreSQL) or on its own (Redis store).
type charger func(ctx context.Context, payment string) (*idempotency.Response, error)

// run pays every payment once through a server that charges with
// charge behind the idempotency middleware on store (none when store is
// nil), with the faults above, and returns the number of charges and of
// payments not charged exactly once. chaos runs store faults until
// stopped.
func run(t *testing.T, store idempotency.Store, charge charger, charges func() map[string]int, chaos func() (stop func() int), miss func(format string, args ...any)) (total, dups, unpaid int) {
	t.Helper()
	wrap := func(h http.Handler) http.Handler { return h }
	if store != nil {
		m, err := idempotency.New(idempotency.Config{
			Store: store, Lease: 2 * time.Second, Wait: 5 * time.Second, StoreTimeout: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		wrap = m.Handler
	}
	first := func(r *http.Request) bool { return r.Header.Get(unherdhttp.AttemptHeader) == "" }
	number := func(r *http.Request) int { n, _ := strconv.Atoi(r.Header.Get("X-Payment")); return n }
	var served, lost, failed atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if first(r) && number(r)%slowEvery == 2 {
			time.Sleep(slowFor)
		}
		// A charge, once begun, is not abandoned because the client hung up.
		resp, err := charge(context.WithoutCancel(r.Context()), string(body))
		if err != nil {
			failed.Add(1)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		resp.Send(w)
	})
	outer := lostResponses(wrap(handler), func(r *http.Request) bool {
		return first(r) && number(r)%loseEvery == 1
	}, &lost)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		outer.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	tr, err := unherdhttp.NewTransport(nil, unherdhttp.Config{
		Retry: retry.Config{
			MaxAttempts: 15,
			Backoff:     backoff.Schedule{Base: 10 * time.Millisecond, Cap: 200 * time.Millisecond},
			Budget:      budget.Unlimited, // the subject here is duplicates, not the retry budget
		},
		AttemptTimeout:     attemptTime,
		AutoIdempotencyKey: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	start := time.Now()
	stopChaos := chaos()
	keyPrefix := fmt.Sprintf("pay-%d-", time.Now().UnixNano())
	pay := func(n int, key string) error {
		payment := "p" + strconv.Itoa(n)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(payment))
		req.Header.Set("X-Payment", strconv.Itoa(n))
		if key != "" {
			req.Header.Set(idempotency.KeyHeader, key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || string(body) != "charged "+payment {
			return fmt.Errorf("%d %q", resp.StatusCode, body)
		}
		return nil
	}
	var wg sync.WaitGroup
	work := make(chan int)
	var logical, failures atomic.Int64
	for range workers {
		wg.Go(func() {
			for n := range work {
				if n%dupEvery != 0 {
					logical.Add(1)
					if err := pay(n, ""); err != nil { // the Transport draws the key
						failures.Add(1)
						if store != nil {
							miss("payment %d: %v", n, err)
						}
					}
					continue
				}
				key := `"` + keyPrefix + strconv.Itoa(n) + `"`
				var dup sync.WaitGroup
				for range 2 {
					logical.Add(1)
					dup.Go(func() {
						if err := pay(n, key); err != nil {
							failures.Add(1)
							if store != nil {
								miss("payment %d (a concurrent duplicate): %v", n, err)
							}
						}
					})
				}
				dup.Wait()
			}
		})
	}
	for n := range payments {
		work <- n
	}
	close(work)
	wg.Wait()
	resets := stopChaos()

	got := charges()
	for n := range payments {
		c := got["p"+strconv.Itoa(n)]
		total += c
		switch {
		case c > 1:
			dups++
			if dups <= 5 && store != nil {
				t.Errorf("payment %d: %d charges, want exactly 1", n, c)
			}
		case c == 0:
			unpaid++
			if unpaid <= 5 && store != nil {
				miss("payment %d: never charged", n)
			}
		}
	}
	wrong := dups + unpaid
	t.Logf("in %v: %d payments (%d logical requests, %d failed), %d requests served, %d responses lost after the server answered (net/http's own resends of a request on a dropped connection included), %d charge attempts failed, %d store reset windows: %d charges, %d payments not charged exactly once",
		time.Since(start).Round(time.Millisecond), payments, logical.Load(), failures.Load(), served.Load(), lost.Load(), failed.Load(), resets, total, wrong)
	return total, dups, unpaid
}

// directCharge charges with one INSERT into table, outside any
// transaction of the idempotency record.
func directCharge(pool *pgxpool.Pool, table string) charger {
	return func(ctx context.Context, payment string) (*idempotency.Response, error) {
		if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (payment) VALUES ($1)", payment); err != nil {
			return nil, err
		}
		return &idempotency.Response{Status: http.StatusCreated, Body: []byte("charged " + payment)}, nil
	}
}

// proxiedDSN is dsn with its host and port replaced by addr.
func proxiedDSN(t *testing.T, dsn, addr string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

func upstreamOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		return u.Hostname() + ":5432"
	}
	return u.Host
}

func countCharges(t *testing.T, pool *pgxpool.Pool, schema string) func() map[string]int {
	return func() map[string]int {
		rows, err := pool.Query(context.Background(), "SELECT payment, count(*) FROM "+pgx.Identifier{schema, "charges"}.Sanitize()+" GROUP BY payment")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var p string
			var n int
			if err := rows.Scan(&p, &n); err != nil {
				t.Fatal(err)
			}
			got[p] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
}

func createCharges(t *testing.T, admin *pgxpool.Pool, schema string) string {
	t.Helper()
	table := pgx.Identifier{schema, "charges"}.Sanitize()
	if _, err := admin.Exec(context.Background(), "CREATE TABLE "+table+" (payment text NOT NULL, at timestamptz NOT NULL DEFAULT now())"); err != nil {
		t.Fatal(err)
	}
	return table
}

// The server keeps its records in PostgreSQL behind Toxiproxy and charges
// in the same transaction as it completes the record (unherdpg.InTx).
func TestPaymentsPostgreSQL(t *testing.T) {
	admin, schema := requireServices(t)
	table := createCharges(t, admin, schema)
	proxy := toxitest.New(t, upstreamOf(t, services.PostgresDSN()))
	pool := newPool(t, proxiedDSN(t, services.PostgresDSN(), proxy.Addr), "")
	store := unherdpg.NewStore(pool, unherdpg.StoreConfig{Schema: schema})
	if err := unherdpg.NewStore(admin, unherdpg.StoreConfig{Schema: schema}).EnsureSchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	charge := func(ctx context.Context, payment string) (*idempotency.Response, error) {
		return store.InTx(ctx, func(ctx context.Context, tx pgx.Tx) (*idempotency.Response, error) {
			if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (payment) VALUES ($1)", payment); err != nil {
				return nil, err
			}
			return &idempotency.Response{Status: http.StatusCreated, Body: []byte("charged " + payment)}, nil
		})
	}
	payThroughChaos(t, store, charge, countCharges(t, admin, schema), proxy)
}

// The same load and faults against a server without the middleware
// charge some payments more than once: the faults are the ones that
// matter.
func TestPaymentsWithoutMiddleware(t *testing.T) {
	admin, schema := requireServices(t)
	table := createCharges(t, admin, schema)
	charge := directCharge(admin, table)
	total, dups, unpaid := run(t, nil, charge, countCharges(t, admin, schema), func() func() int { return func() int { return 0 } }, t.Errorf)
	if wrong := dups + unpaid; total <= payments || wrong == 0 {
		t.Errorf("without the middleware: %d charges for %d payments, %d not charged exactly once; want duplicates", total, payments, wrong)
	}
}

// The server keeps its records in Redis behind Toxiproxy and charges in
// PostgreSQL directly; the middleware completes the record after the
// charge commits.
func TestPaymentsRedis(t *testing.T) {
	admin, schema := requireServices(t)
	table := createCharges(t, admin, schema)
	proxy := toxitest.New(t, services.RedisAddr())
	store := unherdredis.NewStore(newRedis(t, proxy.Addr), unherdredis.StoreConfig{Prefix: "unherd:e2e:" + schema + ":"})
	charge := directCharge(admin, table)
	payThroughChaos(t, store, charge, countCharges(t, admin, schema), proxy)
}

// payThroughChaos runs the payments through a server on store while
// storeChaos faults the store's connections behind proxy, and checks that
// every payment was charged exactly once (a payment never charged is a
// knownShortfall).
func payThroughChaos(t *testing.T, store idempotency.Store, charge charger, charges func() map[string]int, proxy *toxitest.Proxy) {
	t.Helper()
	miss := knownShortfall(t)
	_, dups, unpaid := run(t, store, charge, charges, func() func() int {
		return storeChaos(t, proxy, 400*time.Millisecond, 40*time.Millisecond)
	}, miss)
	if dups != 0 {
		t.Errorf("%d payments charged more than once", dups)
	}
	if unpaid != 0 {
		miss("%d payments never charged", unpaid)
	}
}

// knownShortfall returns how a test reports that a store's availability
// and recovery goals are missed (a request over its bound, a 503 while
// the store is reachable, a key the client gave up on): t.Errorf, except
// under the race detector, which slows every request several times over
// and makes the store's clients miss their timeouts: there it logs that
// the goal is not met. UNHERD_STRICT_RECOVERY=1 judges them there too.
// Duplicates and wrong answers are always errors.
func knownShortfall(t *testing.T) func(format string, args ...any) {
	if os.Getenv("UNHERD_STRICT_RECOVERY") == "1" || !raceEnabled {
		return t.Errorf
	}
	return func(format string, args ...any) {
		t.Helper()
		t.Logf("GOAL NOT MET (race detector): "+format, args...)
	}
}
