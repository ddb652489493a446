package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultInterval is the least time between two lines of a Lines.
const DefaultInterval = 3 * time.Second

// Lines reports progress as plain lines, for a standard error that is not
// a terminal (a log, a pipe, CI): "report: hedge 40% (4/10)", at most one
// line every DefaultInterval, the first once DefaultDelay has passed, and
// a last one when the work ends if any line was written. Quick work
// writes nothing. Progress never goes back: a report of a smaller share
// done than before is ignored. A nil *Lines is valid and does nothing. Its methods are
// safe for concurrent use.
type Lines struct {
	w     io.Writer
	desc  string
	now   func() time.Time
	start time.Time

	mu          sync.Mutex
	last        time.Time // when the last line was written; zero for none
	done, total int
	detail      func() string // appended to each line, if set and not empty
}

// NewLines returns a Lines that writes to w, each line starting with desc.
// now reads the clock; nil means time.Now.
func NewLines(w io.Writer, desc string, now func() time.Time) *Lines {
	if now == nil {
		now = time.Now
	}
	return &Lines{w: w, desc: desc, now: now, start: now()}
}

// Update records that done of total units of work are finished. It has
// the shape of sim.Options.Progress.
func (l *Lines) Update(done, total int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if total <= 0 || goesBack(done, total, l.done, l.total) {
		return
	}
	l.done, l.total = done, total
	t := l.now()
	if done >= total || t.Sub(l.start) < DefaultDelay || (!l.last.IsZero() && t.Sub(l.last) < DefaultInterval) {
		return
	}
	l.write(t)
}

// Detail sets f to say more on each line than the overall percentage
// (which parts of the work are still running, say): its text follows the
// line's figures after a colon, unless it is empty. f is called with the
// Lines' lock held, so it must not call back into l.
func (l *Lines) Detail(f func() string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.detail = f
}

// Finish writes the final state if any line was written before.
func (l *Lines) Finish() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.write(l.now())
	}
}

func (l *Lines) write(t time.Time) {
	pct := 0
	if l.total > 0 {
		pct = 100 * l.done / l.total
	}
	var more string
	if l.detail != nil {
		if d := l.detail(); d != "" {
			more = ": " + d
		}
	}
	fmt.Fprintf(l.w, "%s %d%% (%d/%d) after %s%s\n", l.desc, pct, l.done, l.total, t.Sub(l.start).Round(time.Second), more)
	l.last = t
}
