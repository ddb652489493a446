package unherdhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/internal/configtest"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

// Every test closes its servers and its transports' idle connections, so
// no net/http goroutine is expected to outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fast is a retry config whose waits are zero, for tests on real sockets
// that are about what is retried, not when.
var fast = retry.Config{Backoff: backoff.Schedule{Immediate: true}}

// newTransport builds a Transport over its own base transport and closes
// that transport's idle connections when the test ends.
func newTransport(t testing.TB, cfg unherdhttp.Config) *unherdhttp.Transport {
	t.Helper()
	tr := configtest.Must(unherdhttp.NewTransport(nil, cfg))(t)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// newServer starts a loopback server that closes with the test.
func newServer(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
