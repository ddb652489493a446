package unherdhttp_test

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/unherdhttp"
)

// The body of a 101 Switching Protocols response is the connection: under
// an attempt timeout, whose context lives until the body is closed, the
// caller writes to it and reads from it through the Transport's wrapper,
// and closing it closes the connection.
func TestSwitchingProtocolsBody(t *testing.T) {
	serverEnd := make(chan error, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			serverEnd <- err
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, err := brw.ReadString('\n')
		if err == nil {
			_, _ = brw.WriteString(line) // echo one line
			_ = brw.Flush()
			_, err = brw.ReadByte() // then wait for the client to close
		}
		serverEnd <- err
	})
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := newTransport(t, unherdhttp.Config{Retry: withAttemptTimeout(fast, time.Minute)}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("the 101 response's body is a %T, not an io.ReadWriteCloser", resp.Body)
	}
	if _, err := io.WriteString(conn, "ping\n"); err != nil {
		t.Fatalf("writing to the connection: %v", err)
	}
	if got, err := bufio.NewReader(conn).ReadString('\n'); got != "ping\n" || err != nil {
		t.Fatalf("read %q, %v from the connection; want the echo", got, err)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := await.Recv(t, serverEnd, "the server to see the connection close"); err != io.EOF {
		t.Errorf("the server's read after Close: %v, want EOF", err)
	}
}
