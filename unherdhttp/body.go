package unherdhttp

import (
	"bytes"
	"io"
	"math"
	"time"

	"github.com/unherd/unherd/retry/engine"
)

// drainTime bounds how long a discarded response body is read. A body
// still arriving after that is not worth its connection: it is closed,
// and its connection with it. A body sent with its headers, as error
// bodies nearly always are, takes microseconds to read.
const drainTime = 20 * time.Millisecond

// drain reads up to limit bytes of a discarded response body, for at most
// drainTime, and closes it: net/http reuses a connection only once its
// body was read to the end, and a small remainder is cheaper to read than
// a new connection. The time bound means that a server that sends part
// of a body and stalls holds up the retry loop (or a hedge that lost) for
// drainTime, not until the caller gives up. With limit <= 0 the body is
// closed at once.
func drain(body io.ReadCloser, limit int64) {
	if body == nil {
		return
	}
	if limit > 0 {
		// Closing the body from the timer unblocks a pending read of
		// net/http's response bodies (HTTP/1 and HTTP/2 alike).
		t := time.AfterFunc(drainTime, func() { _ = body.Close() })
		_, _ = io.CopyN(io.Discard, body, limit)
		if !t.Stop() {
			return // the timer closed it
		}
	}
	_ = body.Close()
}

// bufferBody reads a request body without GetBody so that it can be sent
// again. If it fits in limit bytes, it returns them and closes body. If it
// is larger, it returns a body that replays what was read and then the
// rest, to be sent once. A read error closes body and is returned.
func bufferBody(body io.ReadCloser, limit int64) (buf []byte, once io.ReadCloser, err error) {
	// Read one byte past the limit to tell "exactly limit" from "more".
	// No body holds more than math.MaxInt64 bytes, so that limit needs no
	// extra byte, and limit+1 would overflow to a negative limit, which
	// reads nothing.
	n := limit
	if n < math.MaxInt64 {
		n++
	}
	b, err := io.ReadAll(io.LimitReader(body, n))
	if err != nil {
		_ = body.Close()
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, &prefixBody{Reader: io.MultiReader(bytes.NewReader(b), body), body: body}, nil
	}
	_ = body.Close()
	if b == nil {
		b = []byte{}
	}
	return b, nil, nil
}

// prefixBody is a request body of which a prefix was already read.
type prefixBody struct {
	io.Reader
	body io.Closer
}

func (p *prefixBody) Close() error { return p.body.Close() }

// bytesBody returns a fresh body reading buf.
func bytesBody(buf []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(buf)) }

// cancelBody is a response body whose attempt context is cancelled when
// it is closed: the attempt timeout covers time to headers, and the
// context must live while the caller reads the body.
type cancelBody struct {
	io.ReadCloser
	att *engine.Attempt
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.att.Cancel(nil)
	return err
}

// cancelRWBody is cancelBody for the body of a 101 Switching Protocols
// response, which is also the connection's writer.
type cancelRWBody struct {
	cancelBody
	io.Writer
}
