package unherdredis_test

import (
	"cmp"
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/services"
)

// Every test closes its clients, servers and Redis processes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// redisAddr is the Redis the tests use: UNHERD_REDIS_ADDR, by default
// 127.0.0.1:6379.
func redisAddr() string { return cmp.Or(os.Getenv("UNHERD_REDIS_ADDR"), "127.0.0.1:6379") }

// newClient connects to the test Redis, closing the client with t, and
// skips t when the Redis cannot be reached.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr(), PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		services.Unavailable(t, "Redis at %s is unreachable: %v", redisAddr(), err)
	}
	return c
}
