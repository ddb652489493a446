package lazyctx

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/unherd/unherd/internal/await"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errExpiry = errors.New("expiry cause")
	errParent = errors.New("parent cause")
	errOwn    = errors.New("own cause")
)

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkEnded fails t unless ctx has ended with err and cause, and its
// Done channel is closed.
func checkEnded(t *testing.T, ctx context.Context, err, cause error) {
	t.Helper()
	if got := ctx.Err(); got != err {
		t.Errorf("Err() = %v, want %v", got, err)
	}
	if got := context.Cause(ctx); got != cause {
		t.Errorf("Cause() = %v, want %v", got, cause)
	}
	if !isClosed(ctx.Done()) {
		t.Error("Done() is open after the end")
	}
}

// checkLive fails t unless ctx is live: Err and Cause nil, Done open.
func checkLive(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := ctx.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	if cause := context.Cause(ctx); cause != nil {
		t.Errorf("Cause() = %v, want nil", cause)
	}
	if isClosed(ctx.Done()) {
		t.Error("Done() is closed on a live context")
	}
}

func TestExpiry(t *testing.T) {
	eachWatch(t, func(t *testing.T, watched bool) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		c := WithTimeout(parent, time.Second, errExpiry)
		if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Second)) {
			t.Errorf("Deadline() = %v, %v; want %v, true", d, ok, start.Add(time.Second))
		}
		if watched {
			done := c.Done()
			time.Sleep(time.Second - time.Nanosecond)
			if isClosed(done) || c.Err() != nil {
				t.Fatal("ended before its timeout")
			}
			<-done
			if got := time.Since(start); got != time.Second {
				t.Errorf("Done closed after %v, want 1s", got)
			}
		} else {
			time.Sleep(time.Second - time.Nanosecond)
			if err := c.Err(); err != nil {
				t.Fatalf("Err() = %v before its timeout", err)
			}
			time.Sleep(time.Nanosecond)
		}
		checkEnded(t, c, context.DeadlineExceeded, errExpiry)
		if !c.Expired() {
			t.Error("Expired() = false after its own timeout")
		}
		if parent.Err() != nil {
			t.Error("the parent ended with its child")
		}
	})
}

// TestExpiryBeforeParentDeadline: a deadline of its own earlier than the
// parent's ends the context first, with its own cause.
func TestExpiryBeforeParentDeadline(t *testing.T) {
	eachWatch(t, func(t *testing.T, watched bool) {
		parent, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		c := WithTimeout(parent, time.Second, errExpiry)
		if d, _ := c.Deadline(); !d.Equal(start.Add(time.Second)) {
			t.Errorf("Deadline() = %v, want its own, %v", d, start.Add(time.Second))
		}
		if watched {
			<-c.Done()
		} else {
			time.Sleep(time.Second)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("ended after %v, want 1s", got)
		}
		checkEnded(t, c, context.DeadlineExceeded, errExpiry)
		if !c.Expired() {
			t.Error("Expired() = false")
		}
	})
}

// TestWatchedAfterExpiry: Done first called after the deadline has passed
// returns a closed channel.
func TestWatchedAfterExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := WithTimeout(context.Background(), time.Second, errExpiry)
		time.Sleep(time.Second)
		if !isClosed(c.Done()) {
			t.Error("Done() open after the deadline")
		}
		checkEnded(t, c, context.DeadlineExceeded, errExpiry)
	})
}

func TestExpiryDefaultCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := WithTimeout(context.Background(), time.Second, nil)
		time.Sleep(time.Second)
		checkEnded(t, c, context.DeadlineExceeded, context.DeadlineExceeded)
	})
}

// TestParentEnds covers both constructors, a parent that ends by cancel
// or at its deadline, before or after Done is first called.
func TestParentEnds(t *testing.T) {
	type mk func(context.Context) *Context
	makers := map[string]mk{
		"WithCancel":  WithCancel,
		"WithTimeout": func(p context.Context) *Context { return WithTimeout(p, time.Hour, errExpiry) },
	}
	for name, newCtx := range makers {
		for _, watched := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/unwatched", true: "/watched"}[watched], func(t *testing.T) {
				t.Run("cancel", func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						parent, cancel := context.WithCancelCause(context.Background())
						c := newCtx(parent)
						if watched {
							c.Done()
						}
						checkLive(t, c)
						cancel(errParent)
						// No wait: Err finds the parent's end at once, and
						// makes Done show it.
						checkEnded(t, c, context.Canceled, errParent)
						if c.Expired() {
							t.Error("Expired() = true after the parent's cancel")
						}
					})
				})
				t.Run("deadline", func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						start := time.Now()
						parent, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						c := newCtx(parent)
						if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Minute)) {
							t.Errorf("Deadline() = %v, %v; want the parent's, %v", d, ok, start.Add(time.Minute))
						}
						if watched {
							<-c.Done()
							if got := time.Since(start); got != time.Minute {
								t.Errorf("Done closed after %v, want 1m", got)
							}
						} else {
							time.Sleep(time.Minute)
							synctest.Wait() // for the parent's own timer
						}
						checkEnded(t, c, context.DeadlineExceeded, context.DeadlineExceeded)
						if c.Expired() {
							t.Error("Expired() = true at the parent's deadline")
						}
					})
				})
				t.Run("before", func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						parent, cancel := context.WithCancelCause(context.Background())
						cancel(errParent)
						c := newCtx(parent)
						if watched {
							if !isClosed(c.Done()) {
								t.Error("Done() open under an ended parent")
							}
						}
						checkEnded(t, c, context.Canceled, errParent)
					})
				})
			})
		}
	}
}

// TestWatchedParentCancel: once Done has been called, the parent's end
// closes the channel by itself, with nobody calling Err: at once for
// WithCancel (a child of the parent), from the hook's goroutine for
// WithTimeout.
func TestWatchedParentCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.Background())
		follows := WithCancel(parent)
		timed := WithTimeout(parent, time.Hour, errExpiry)
		fdone, tdone := follows.Done(), timed.Done()
		cancel(errParent)
		if !isClosed(fdone) {
			t.Error("WithCancel: Done open right after the parent's cancel")
		}
		<-tdone // the hook runs on a goroutine of its own
		checkEnded(t, follows, context.Canceled, errParent)
		checkEnded(t, timed, context.Canceled, errParent)
	})
}

func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cause     error
		wantCause error
		watched   bool
		timeout   bool
	}{
		{name: "nil/unwatched", wantCause: context.Canceled},
		{name: "nil/watched", wantCause: context.Canceled, watched: true},
		{name: "cause/unwatched", cause: errOwn, wantCause: errOwn},
		{name: "cause/watched", cause: errOwn, wantCause: errOwn, watched: true},
		{name: "timeout/cause/unwatched", cause: errOwn, wantCause: errOwn, timeout: true},
		{name: "timeout/cause/watched", cause: errOwn, wantCause: errOwn, watched: true, timeout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, pcancel := context.WithCancelCause(context.Background())
				defer pcancel(nil)
				c := WithCancel(parent)
				if tc.timeout {
					c = WithTimeout(parent, time.Second, errExpiry)
				}
				var done <-chan struct{}
				if tc.watched {
					done = c.Done()
				}
				c.Cancel(tc.cause)
				if done != nil && !isClosed(done) {
					t.Error("the channel Done returned before Cancel is still open")
				}
				checkEnded(t, c, context.Canceled, tc.wantCause)
				// Later ends change nothing.
				c.Cancel(errors.New("second cancel"))
				pcancel(errParent)
				time.Sleep(2 * time.Second)
				checkEnded(t, c, context.Canceled, tc.wantCause)
				if c.Expired() {
					t.Error("Expired() = true after Cancel")
				}
			})
		})
	}
}

// TestCancelAfterUnseenEnd: Cancel on a context whose parent has ended,
// or whose deadline has passed, keeps that end, as a
// context.CancelCauseFunc does, whether or not anyone had seen it.
func TestCancelAfterUnseenEnd(t *testing.T) {
	eachWatch(t, func(t *testing.T, watched bool) {
		parent, pcancel := context.WithCancelCause(context.Background())
		follows := WithCancel(parent)
		timed := WithTimeout(context.Background(), time.Second, errExpiry)
		if watched {
			follows.Done()
			timed.Done()
		}
		pcancel(errParent)
		time.Sleep(time.Second)
		follows.Cancel(errOwn)
		timed.Cancel(errOwn)
		checkEnded(t, follows, context.Canceled, errParent)
		checkEnded(t, timed, context.DeadlineExceeded, errExpiry)
	})
}

// TestDerived checks contexts derived from a Context: they see its end
// and its cause, whether it ends by Cancel, by its parent, or at its
// deadline, and whether it had ended before they were made.
func TestDerived(t *testing.T) {
	for _, tc := range []struct {
		name      string
		end       func(c *Context, pcancel context.CancelCauseFunc)
		wantErr   error
		wantCause error
	}{
		{"cancel", func(c *Context, _ context.CancelCauseFunc) { c.Cancel(errOwn) }, context.Canceled, errOwn},
		{"parent", func(_ *Context, pcancel context.CancelCauseFunc) { pcancel(errParent) }, context.Canceled, errParent},
		{"parent-deadline", func(*Context, context.CancelCauseFunc) {
			time.Sleep(time.Second / 2)
			synctest.Wait() // the parent's timer has run
		}, context.DeadlineExceeded, context.DeadlineExceeded},
		{"expiry", func(*Context, context.CancelCauseFunc) { time.Sleep(time.Second) }, context.DeadlineExceeded, errExpiry},
	} {
		for _, before := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/after", true: "/before"}[before], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var parent context.Context
					parent, pcancel := context.WithCancelCause(context.Background())
					defer pcancel(nil)
					if tc.name == "parent-deadline" {
						var cancel context.CancelFunc
						parent, cancel = context.WithTimeout(parent, time.Second/2)
						defer cancel()
					}
					c := WithTimeout(parent, time.Second, errExpiry)
					if before {
						tc.end(c, pcancel)
					}
					child, cancelChild := context.WithCancel(c)
					defer cancelChild()
					timed, cancelTimed := context.WithTimeout(c, time.Hour)
					defer cancelTimed()
					if d, _ := timed.Deadline(); !before && !d.Equal(c.expiry) && tc.name != "parent-deadline" {
						t.Errorf("derived WithTimeout(1h) has deadline %v, want its parent's 1s", d)
					}
					ran := make(chan struct{})
					stop := context.AfterFunc(c, func() { close(ran) })
					defer stop()
					if !before {
						checkLive(t, child)
						checkLive(t, timed)
						tc.end(c, pcancel)
					}
					// The derived contexts end with c, at once: they are
					// children of its inner cancelCtx, which is closed by
					// the time c reports its end. They end with c's Err
					// too: DeadlineExceeded after a deadline, as children
					// of a context.WithTimeout do.
					if got := c.Err(); got != tc.wantErr {
						t.Errorf("Err() = %v, want %v", got, tc.wantErr)
					}
					for name, d := range map[string]context.Context{"WithCancel": child, "WithTimeout": timed} {
						if !isClosed(d.Done()) {
							t.Errorf("derived %s still open", name)
						}
						if got := d.Err(); got != tc.wantErr {
							t.Errorf("derived %s: Err = %v, want %v", name, got, tc.wantErr)
						}
						if got := context.Cause(d); got != tc.wantCause {
							t.Errorf("derived %s: Cause = %v, want %v", name, got, tc.wantCause)
						}
					}
					synctest.Wait()
					if !isClosed(ran) {
						t.Error("AfterFunc on the context did not run")
					}
				})
			})
		}
	}
}

func TestDetach(t *testing.T) {
	eachWatch(t, func(t *testing.T, watched bool) {
		parent, pcancel := context.WithCancelCause(context.Background())
		c := WithTimeout(parent, time.Second, errExpiry)
		var done <-chan struct{}
		if watched {
			done = c.Done()
		}
		c.Detach()
		if d, ok := c.Deadline(); ok {
			t.Errorf("Deadline() = %v, true after Detach, want none", d)
		}
		pcancel(errParent)
		time.Sleep(time.Hour)
		checkLive(t, c)
		if done != nil && isClosed(done) {
			t.Error("Done channel from before Detach closed")
		}
		// Detach then watch: still live, until Cancel.
		child, cancelChild := context.WithCancel(c)
		defer cancelChild()
		checkLive(t, child)
		c.Cancel(errOwn)
		checkEnded(t, c, context.Canceled, errOwn)
		checkEnded(t, child, context.Canceled, errOwn)
	})
}

// TestDetachUnseenEnd: an end that nobody had seen when Detach is called
// (the parent's, or the deadline's, with Done never called) is ignored.
func TestDetachUnseenEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, pcancel := context.WithCancel(context.Background())
		c := WithTimeout(parent, time.Second, errExpiry)
		time.Sleep(time.Second)
		pcancel()
		c.Detach()
		checkLive(t, c)
	})
}

func TestDetachAfterEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := WithTimeout(context.Background(), time.Second, errExpiry)
		time.Sleep(time.Second)
		if c.Err() == nil {
			t.Fatal("live after its timeout")
		}
		c.Detach()
		checkEnded(t, c, context.DeadlineExceeded, errExpiry)
		if !c.Expired() {
			t.Error("Expired() = false")
		}
	})
}

func TestDetachWithCancelPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Detach on a WithCancel context did not panic")
		}
	}()
	WithCancel(context.Background()).Detach()
}

type key struct{}

func TestValues(t *testing.T) {
	for name, newCtx := range map[string]func(context.Context) *Context{
		"WithCancel":  WithCancel,
		"WithTimeout": func(p context.Context) *Context { return WithTimeout(p, time.Second, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			parent := context.WithValue(context.Background(), key{}, "v")
			c := newCtx(parent)
			check := func(when string) {
				t.Helper()
				if got := c.Value(key{}); got != "v" {
					t.Errorf("%s: Value = %v, want v", when, got)
				}
				if got := c.Value("other"); got != nil {
					t.Errorf("%s: Value(other) = %v, want nil", when, got)
				}
			}
			check("unwatched")
			c.Done()
			check("watched")
			c.Cancel(nil)
			check("cancelled")
		})
	}
}

// TestValueAtExpiry reads a watched context's values while its deadline
// ends it on the timer's goroutine: the values stay the parent's
// throughout, and the end has the expiry's cause. It runs on real time
// (a millisecond), so that the race detector sees the timer's goroutine
// and the reader run at once.
func TestValueAtExpiry(t *testing.T) {
	for range 20 {
		parent := context.WithValue(context.Background(), key{}, "v")
		c := WithTimeout(parent, time.Millisecond, errExpiry)
		done := c.Done()
		for ended := false; !ended; {
			select {
			case <-done:
				ended = true
			default:
			}
			if got := c.Value(key{}); got != "v" {
				t.Fatalf("Value = %v, want v", got)
			}
		}
		checkEnded(t, c, context.DeadlineExceeded, errExpiry)
	}
}

// TestCauseBeforeValue: a context cancelled before anyone watched it has
// its own cause, not its parent's, even when the parent ends later.
func TestCauseBeforeValue(t *testing.T) {
	parent, pcancel := context.WithCancelCause(context.Background())
	c := WithCancel(parent)
	c.Cancel(errOwn)
	pcancel(errParent)
	checkEnded(t, c, context.Canceled, errOwn)
}

// TestConcurrent races Done, Err, Value, Cause, Cancel and the parent's
// cancel, and checks the invariants every goroutine must see: once Err
// reports an end, Done's channel is closed; all agree on the cause.
func TestConcurrent(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		t.Run(map[bool]string{false: "WithCancel", true: "WithTimeout"}[timeout], func(t *testing.T) {
			for range 200 {
				parent, pcancel := context.WithCancelCause(context.Background())
				defer pcancel(nil)
				c := WithCancel(parent)
				if timeout {
					c = WithTimeout(parent, time.Hour, errExpiry)
				}
				start := make(chan struct{})
				results := make(chan error, 8)
				for i := range 6 {
					go func() {
						<-start
						switch i {
						case 0:
							c.Cancel(errOwn)
						case 1:
							pcancel(errParent)
						case 2:
							<-c.Done()
						}
						for c.Err() == nil {
							if i == 3 {
								c.Value(key{})
							}
						}
						if !isClosed(c.Done()) {
							results <- errors.New("Err reported an end while Done was open")
							return
						}
						results <- context.Cause(c)
					}()
				}
				close(start)
				var first error
				for range 6 {
					got := await.Recv(t, results, "a racing goroutine to see the end and report its cause")
					if got != errOwn && got != errParent {
						t.Fatalf("Cause = %v, want %v or %v", got, errOwn, errParent)
					}
					if first == nil {
						first = got
					} else if got != first {
						t.Fatalf("goroutines saw causes %v and %v", first, got)
					}
				}
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, f := range map[string]func(){
		"WithCancel+Cancel": func() {
			c := WithCancel(parent)
			_ = c.Err()
			c.Cancel(nil)
		},
		"WithTimeout+Detach": func() {
			c := WithTimeout(parent, time.Second, errExpiry)
			_ = c.Err()
			c.Detach()
		},
		"WithTimeout+Cancel": func() {
			c := WithTimeout(parent, time.Second, errExpiry)
			c.Cancel(nil)
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
}

// TestStopDeadline: after StopDeadline the context outlives its own
// deadline, reports its parent's, and still ends with its parent.
func TestStopDeadline(t *testing.T) {
	eachWatch(t, func(t *testing.T, watched bool) {
		parent, pcancel := context.WithCancelCause(context.Background())
		c := WithTimeout(parent, time.Second, errExpiry)
		if watched {
			_ = c.Done()
		}
		c.StopDeadline()
		if d, ok := c.Deadline(); ok {
			t.Errorf("Deadline() = %v, true after StopDeadline, want the parent's (none)", d)
		}
		time.Sleep(time.Hour)
		checkLive(t, c)
		if c.Expired() {
			t.Error("Expired() after StopDeadline")
		}
		pcancel(errParent)
		synctest.Wait()
		checkEnded(t, c, context.Canceled, errParent)
	})
}

// eachWatch runs f in a testing/synctest bubble, as the subtests
// "unwatched" and "watched": watched says whether f is to call the
// Context's Done, which sets up its machinery, before the end it tests;
// a Context ends by either path.
func eachWatch(t *testing.T, f func(t *testing.T, watched bool)) {
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "unwatched", true: "watched"}[watched], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, watched) })
		})
	}
}
