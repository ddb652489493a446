package unherdhttp_test

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/observe"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdhttp"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"seconds", "120", 120 * time.Second, true},
		{"zero seconds", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding whitespace", " 5\t", 5 * time.Second, true},
		{"seconds saturate", "99999999999999999999999", time.Duration(math.MaxInt64), true},
		{"IMF-fixdate", "Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"RFC 850 date", "Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"asctime date", "Sun Mar  1 12:00:10 2026", 10 * time.Second, true},
		{"date in the past", "Sun, 01 Mar 2026 11:00:00 GMT", 0, true},
		{"empty", "", 0, false},
		{"negative", "-1", 0, false},
		{"plus sign", "+1", 0, false},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
		{"date without zone", "Sun, 01 Mar 2026 12:00:30", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := unherdhttp.ParseRetryAfter(tc.value, epoch)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:00:10 2026", "-1", "1e3", "99999999999999999999"} {
		f.Add(s, uint32(5), int64(0))
	}
	f.Fuzz(func(t *testing.T, value string, secs uint32, nowUnix int64) {
		now := time.Unix(nowUnix%(1<<40), 0).UTC() // years 0 to ~36812: formattable
		d, ok := unherdhttp.ParseRetryAfter(value, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", value, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when not ok", value, d)
		}
		// Round trips: delay-seconds, and the IMF-fixdate that many
		// seconds after now, give back the same delay.
		want := time.Duration(secs) * time.Second
		if got, ok := unherdhttp.ParseRetryAfter(strconv.FormatUint(uint64(secs), 10), now); !ok || got != want {
			t.Fatalf("seconds %d: got %v, %v; want %v", secs, got, ok, want)
		}
		date := now.Add(want)
		if date.Year() > 9999 {
			return // outside the four-digit years of HTTP-date
		}
		if got, ok := unherdhttp.ParseRetryAfter(date.Format(http.TimeFormat), now); !ok || got != want {
			t.Fatalf("date %s: got %v, %v; want %v", date.Format(http.TimeFormat), got, ok, want)
		}
	})
}

// retryAfterServer answers 503 (or status) with Retry-After: value to
// the first request, and 200 after.
func retryAfterServer(t *testing.T, status int, value func() string) (string, *atomic.Int32) {
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", value())
			w.WriteHeader(status)
			io.WriteString(w, "busy")
			return
		}
		io.WriteString(w, "ok")
	})
	return srv.URL, &hits
}

// withJitter returns the bounds of a wait with floor d: d, plus up to
// the default ServerJitter (0.1) of it.
func withJitter(d time.Duration) (lo, hi time.Duration) {
	return d, d + d/10
}

// retryAfterDate returns a Retry-After value that is an HTTP-date ahead
// of the server's clock at the moment it answers, and the bounds of the
// wait the transport may derive from it, given read, a clock reading
// taken after the transport parsed the header.
//
// An HTTP-date has whole seconds: the server writes date, its clock at
// the moment written plus ahead, truncated, between ahead-1s and ahead
// after written. The transport's floor is date minus its own clock when it
// parses the header, some moment between written and read; the wait is
// that floor plus up to 10%. So the wait lies in [date-read,
// (date-written)*1.1], however long the response took to reach the
// client: these are the bounds the rule guarantees. A fixed lower bound
// (such as 1.5 s for ahead = 3 s) would instead depend on how quickly a
// loaded machine delivers the response.
func retryAfterDate(ahead time.Duration) (value func() string, bounds func(read time.Time) (lo, hi time.Duration)) {
	var date, written time.Time
	value = func() string {
		written = time.Now()
		date = written.Add(ahead).UTC().Truncate(time.Second)
		return date.Format(http.TimeFormat)
	}
	bounds = func(read time.Time) (lo, hi time.Duration) {
		_, hi = withJitter(date.Sub(written))
		return date.Sub(read), hi
	}
	return value, bounds
}

// Retry-After sets the wait, as a floor with a little jitter on top. The
// hook cancels the request once it has seen the wait, so nothing sleeps.
func TestRetryAfterIsFloor(t *testing.T) {
	seconds := func(d time.Duration) func(time.Time) (time.Duration, time.Duration) {
		return func(time.Time) (time.Duration, time.Duration) { return withJitter(d) }
	}
	dateValue, dateBounds := retryAfterDate(3 * time.Second)
	tests := []struct {
		name   string
		status int
		value  func() string
		bounds func(read time.Time) (lo, hi time.Duration)
	}{
		{"503 seconds", 503, func() string { return "2" }, seconds(2 * time.Second)},
		{"429 seconds", 429, func() string { return "3" }, seconds(3 * time.Second)},
		{"503 HTTP-date", 503, dateValue, dateBounds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := retryAfterServer(t, tc.status, tc.value)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ev observe.Event
			var read time.Time
			tr := newTransport(t, unherdhttp.Config{Retry: retry.Config{Observer: observe.On(observe.Retry, func(e observe.Event) {
				read = time.Now() // after the transport parsed Retry-After
				ev = e
				cancel()
			})}})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			_, _, err := do(tr, req)
			if !errors.Is(err, retry.ErrCancelled) {
				t.Fatalf("got %v, want the cancellation from the hook", err)
			}
			lo, hi := tc.bounds(read)
			if ev.Delay < lo || ev.Delay > hi || ev.Class != failure.Throttled {
				t.Errorf("waited %v as %v, want [%v, %v] as throttled", ev.Delay, ev.Class, lo, hi)
			}
			var se *unherdhttp.StatusError
			if !errors.As(ev.Err, &se) || se.StatusCode != tc.status {
				t.Errorf("attempt error %v, want a StatusError %d", ev.Err, tc.status)
			}
		})
	}
}

// A Retry-After longer than MaxServerDelay (30 s by default) ends the
// retries: the 503 goes back at once, after one request, with a nil error,
// instead of a retry the server asked not to receive.
func TestRetryAfterTooLong(t *testing.T) {
	tests := []struct {
		name string
		cfg  retry.Config
	}{
		{"default MaxServerDelay", retry.Config{}},
		{"MaxServerDelay 10ms", retry.Config{MaxServerDelay: 10 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, hits := retryAfterServer(t, 503, func() string { return "3600" })
			retried := false
			tc.cfg.Observer = observe.On(observe.Retry, func(observe.Event) { retried = true })
			tr := newTransport(t, unherdhttp.Config{Retry: tc.cfg})
			status, body, err := get(t, tr, url)
			if err != nil || status != 503 || body != "busy" {
				t.Fatalf("got %d %q, %v; want the 503 response with a nil error", status, body, err)
			}
			if hits.Load() != 1 || retried {
				t.Errorf("server saw %d requests (retried: %v), want 1 and no retry", hits.Load(), retried)
			}
		})
	}
}

// A wait that would pass the caller's deadline is not started: the last
// response goes back at once.
func TestRetryAfterPastDeadline(t *testing.T) {
	url, hits := retryAfterServer(t, 503, func() string { return "20" })
	tr := newTransport(t, unherdhttp.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	status, body, err := do(tr, req)
	if err != nil || status != 503 || body != "busy" {
		t.Fatalf("got %d %q, %v; want the 503 response", status, body, err)
	}
	if hits.Load() != 1 {
		t.Errorf("server saw %d requests, want 1", hits.Load())
	}
	if ctx.Err() != nil {
		t.Error("RoundTrip waited until the deadline")
	}
}

// Clients told "Retry-After: 0" by a real server spread their retries over
// the schedule's window for a throttled retry, [0, 1 s], instead of all
// coming back at once. Each request's hook records the wait and cancels
// the request, so nothing sleeps.
func TestRetryAfterZeroSpreads(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	url := srv.URL
	var waits []time.Duration
	var cancel context.CancelFunc
	tr := newTransport(t, unherdhttp.Config{Retry: retry.Config{
		Rand: rand.NewPCG(3, 4), // the requests run one after another
		Observer: observe.On(observe.Retry, func(e observe.Event) {
			waits = append(waits, e.Delay)
			cancel()
		}),
	}})
	const n = 200
	for range n {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if _, _, err := do(tr, req); !errors.Is(err, retry.ErrCancelled) {
			t.Fatalf("got %v, want the cancellation from the hook", err)
		}
		cancel()
	}
	if len(waits) != n {
		t.Fatalf("%d retries, want %d", len(waits), n)
	}
	var tenths [10]int
	for _, w := range waits {
		if w < 0 || w > time.Second {
			t.Fatalf("wait %v outside [0, 1s]", w)
		}
		tenths[min(int(w/(100*time.Millisecond)), 9)]++
	}
	for i, c := range tenths {
		if c == 0 || c > n/4 {
			t.Errorf("tenth %d of [0, 1s] holds %d of %d waits: %v", i, c, n, tenths)
		}
	}
}

// x-amz-retry-after (milliseconds) is a server delay too; under the AWS
// 2.1 preset it is clamped to [backoff, backoff + 5 s], as the SDKs'
// published cases say, and an invalid value is ignored.
func TestAmzRetryAfter(t *testing.T) {
	tests := []struct {
		value  string
		lo, hi time.Duration
	}{
		{"1500", 1500 * time.Millisecond, 1500 * time.Millisecond},    // above any first throttled backoff (at most 1 s)
		{"10000", 5 * time.Second, 6 * time.Second},                   // backoff + 5 s
		{"0", 0, time.Second},                                         // the backoff itself
		{"invalid", 0, time.Second},                                   // ignored: the backoff
		{"99999999999999999999999", 5 * time.Second, 6 * time.Second}, // saturates, then clamped
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amz-Retry-After", tc.value)
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ev observe.Event
			cfg := retry.AWS2026()
			cfg.Observer = observe.On(observe.Retry, func(e observe.Event) { ev = e; cancel() })
			tr := newTransport(t, unherdhttp.Config{Retry: cfg})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if _, _, err := do(tr, req); !errors.Is(err, retry.ErrCancelled) {
				t.Fatalf("got %v, want the cancellation from the hook", err)
			}
			if ev.Delay < tc.lo || ev.Delay > tc.hi {
				t.Errorf("waited %v, want [%v, %v]", ev.Delay, tc.lo, tc.hi)
			}
		})
	}
}
