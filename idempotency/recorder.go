package idempotency

import (
	"maps"
	"net/http"
	"slices"
	"sync"
)

// recorder buffers a handler's response so that the record is completed
// before the client sees it: a response lost on the way is then always
// replayable. A body over max switches it to streaming, unstored.
type recorder struct {
	resp    Response // what response returns
	w       http.ResponseWriter
	header  http.Header
	status  int
	body    []byte
	max     int64
	streams bool      // the body outgrew max: headers sent, writes pass through
	small   [128]byte // the first bytes of body, saving an allocation for small bodies
}

// recorders recycles recorders, their header maps and body buffers: a
// recorder is done with once its response is sent (a handler must not
// use its ResponseWriter after it returns, and a Store must not keep the
// Response it is given after Complete returns).
var recorders = sync.Pool{New: func() any { return &recorder{header: make(http.Header)} }}

// maxPooledBody is the largest body buffer kept for reuse.
const maxPooledBody = 64 << 10

func getRecorder(w http.ResponseWriter, max int64) *recorder {
	r := recorders.Get().(*recorder)
	r.w, r.max = w, max
	if r.body == nil {
		r.body = r.small[:0]
	}
	return r
}

func putRecorder(r *recorder) {
	clear(r.header)
	body := r.body[:0]
	if cap(body) > maxPooledBody {
		body = nil
	}
	*r = recorder{header: r.header, body: body}
	recorders.Put(r)
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status != 0 {
		return
	}
	if code < 200 {
		// An informational response goes out at once; it is not stored.
		maps.Copy(r.w.Header(), r.header)
		r.w.WriteHeader(code)
		return
	}
	r.status = code
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.streams {
		return r.w.Write(b)
	}
	if int64(len(r.body)+len(b)) > r.max {
		r.streams = true
		r.sendHeader()
		if _, err := r.w.Write(r.body); err != nil {
			return 0, err
		}
		r.body = nil
		return r.w.Write(b)
	}
	r.body = append(r.body, b...)
	return len(b), nil
}

func (r *recorder) sendHeader() {
	maps.Copy(r.w.Header(), r.header)
	r.w.WriteHeader(r.status)
}

// response returns what was recorded, to store.
func (r *recorder) response() *Response {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.resp = Response{Status: r.status, Header: r.header, Body: r.body, Omitted: r.streams}
	return &r.resp
}

// flush sends the buffered response, unless it already streamed.
func (r *recorder) flush() {
	if r.streams {
		return
	}
	r.sendHeader()
	_, _ = r.w.Write(r.body)
}

// replay writes a stored response, saying it is a replay.
func replay(w http.ResponseWriter, resp *Response) {
	w.Header().Set(ReplayedHeader, "true")
	resp.Send(w)
}

// Send writes the response to w: its header fields, each replacing any
// field of that name w already has (one an outer middleware set), its
// status and its body. A handler that builds its response as a Response
// (to store it in its own transaction, as unherdpg's InTx does) sends it
// so.
func (r *Response) Send(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.Header {
		h[k] = slices.Clone(vs)
	}
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body)
}
