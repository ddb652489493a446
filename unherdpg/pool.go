package unherdpg

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Settings PoolConfig applies, so that a connection that died silently
// (its server's host or the network to it gone, with no reset) is found
// and replaced within seconds rather than after the kernel's defaults of
// minutes to hours.
const (
	// DefaultConnectTimeout bounds a new connection, from the dial to
	// the end of authentication. pgxpool keeps connecting in the
	// background after the request that asked for the connection gave
	// up, and holds a place in the pool meanwhile: without a bound, a
	// connection opened while the server was unreachable holds it for
	// pgxpool's two minutes.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultPingTimeout bounds the ping pgxpool sends on a connection
	// idle for over a second before handing it out; a connection that
	// does not answer within it is closed and the next one is tried.
	DefaultPingTimeout = time.Second
	// DefaultHealthCheckPeriod is how often the pool closes its expired
	// connections and opens new ones up to MinConns and MinIdleConns,
	// so that a pool emptied by an outage is refilled soon after.
	DefaultHealthCheckPeriod = 5 * time.Second
	// DefaultTCPUserTimeout bounds how long data sent on a connection
	// may stay unacknowledged by the server's host before the kernel
	// closes the connection (TCP_USER_TIMEOUT, Linux only).
	DefaultTCPUserTimeout = 5 * time.Second
)

// keepAlive probes an idle connection after 5 s and closes it after 3
// probes a second apart go unanswered.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: time.Second, Count: 3}

// PoolConfig parses dsn as pgxpool.ParseConfig does and sets what a
// Store needs to find a dead connection within seconds:
//
//   - ConnConfig.ConnectTimeout, DefaultConnectTimeout unless dsn sets
//     connect_timeout;
//   - ConnConfig.DialFunc, a dialer with that timeout, TCP keep-alives
//     (probes after 5 s idle, 3 a second apart) and, on Linux,
//     TCP_USER_TIMEOUT (DefaultTCPUserTimeout);
//   - PingTimeout, DefaultPingTimeout;
//   - HealthCheckPeriod, DefaultHealthCheckPeriod unless dsn sets
//     pool_health_check_period.
//
// Change the returned Config's fields to size the pool (MaxConns: the
// handlers' concurrency plus StoreConfig.ReservedConns), then open it with
// pgxpool.NewWithConfig. A pool built otherwise works, but a connection
// whose server vanished without a reset may hang a request until the
// middleware's StoreTimeout, each time the pool hands it out, and a
// connection opened while the server was unreachable may hold its place
// in the pool for minutes.
//
// The store's statements are bounded besides (StoreConfig.OpTimeout,
// StoreConfig.TxTimeout); keep-alives and TCP_USER_TIMEOUT close a dead
// connection that nothing is waiting on.
func PoolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("unherdpg: parsing the connection string: %w", err)
	}
	// pgxpool.ParseConfig removed the pool's settings from the runtime
	// parameters; pgx.ParseConfig tells whether dsn named them.
	raw, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("unherdpg: parsing the connection string: %w", err)
	}
	if _, ok := raw.RuntimeParams["pool_health_check_period"]; !ok {
		cfg.HealthCheckPeriod = DefaultHealthCheckPeriod
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	d := &net.Dialer{Timeout: cc.ConnectTimeout, KeepAliveConfig: keepAlive, Control: userTimeout(DefaultTCPUserTimeout)}
	cc.DialFunc = d.DialContext
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	return cfg, nil
}

// Connect opens a pool with cfg and pings the database, so that one that
// cannot be reached is an error now rather than at the first query. On
// an error the pool is closed and nil: nothing is left open.
func Connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("unherdpg: connecting to the database: %w", err)
	}
	return pool, nil
}
