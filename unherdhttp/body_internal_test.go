package unherdhttp

import (
	"bytes"
	"io"
	"math"
	"testing"
)

// bufferBody buffers a body that fits in limit and passes a larger one on
// whole, for every limit: limit+1 must not overflow near math.MaxInt64.
func FuzzBufferBody(f *testing.F) {
	f.Add([]byte("hello"), int64(5))
	f.Add([]byte("hello"), int64(4))
	f.Add([]byte(""), int64(0))
	f.Add([]byte("x"), int64(math.MaxInt64))
	f.Add([]byte("xy"), int64(math.MaxInt64-1))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit < 0 {
			t.Skip("a negative limit disables buffering before bufferBody")
		}
		closed := false
		body := &closeFlag{Reader: bytes.NewReader(data), closed: &closed}
		buf, once, err := bufferBody(body, limit)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) <= limit {
			if once != nil || !bytes.Equal(buf, data) || buf == nil || !closed {
				t.Fatalf("%d bytes, limit %d: got buffer %q (once %v, closed %v), want the whole body buffered and closed", len(data), limit, buf, once != nil, closed)
			}
			return
		}
		if buf != nil || once == nil {
			t.Fatalf("%d bytes, limit %d: got buffer %q, want the body sent once", len(data), limit, buf)
		}
		got, _ := io.ReadAll(once)
		if !bytes.Equal(got, data) || closed {
			t.Fatalf("%d bytes, limit %d: once reads %q (closed %v), want the whole body, still open", len(data), limit, got, closed)
		}
	})
}

type closeFlag struct {
	io.Reader
	closed *bool
}

func (c *closeFlag) Close() error { *c.closed = true; return nil }
