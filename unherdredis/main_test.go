package unherdredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/services"
)

// Every test closes its clients, servers and Redis processes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient connects to the test Redis, closing the client with t, and
// skips t when the Redis cannot be reached.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: services.RedisAddr(), PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		services.Unavailable(t, "Redis at %s is unreachable: %v", services.RedisAddr(), err)
	}
	return c
}
