package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// DefaultDelay is how long a Bar stays silent before it first draws.
const DefaultDelay = time.Second

// redrawEvery is the least time between two drawings of a Bar, except
// the one that shows the work done.
const redrawEvery = 100 * time.Millisecond

// barWidth is the width of the bar itself, in cells.
const barWidth = 30

// IsTerminal reports whether w is a terminal, where a bar makes sense.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Bar is a progress bar that appears only once its work has taken longer
// than DefaultDelay: "report [=======>      ] 40% (4/10) 12s, 18s left".
// The time left is the time taken so far scaled by the share of the work
// still to do, on the clock the Bar was given. Progress never goes back:
// a report of a smaller share done than before is ignored. A nil *Bar is
// valid and does nothing. Its methods are safe for concurrent use.
type Bar struct {
	w     io.Writer
	desc  string
	now   func() time.Time
	start time.Time

	mu          sync.Mutex
	done, total int
	drawn       time.Time // when the bar was last drawn; zero for never
	width       int       // of the last line drawn, to clear it
}

// New returns a Bar that draws on w, labelled desc, once DefaultDelay has
// passed since this call. now reads the clock; nil means time.Now.
func New(w io.Writer, desc string, now func() time.Time) *Bar {
	if now == nil {
		now = time.Now
	}
	return &Bar{w: w, desc: desc, now: now, start: now()}
}

// Update records that done of total units of work are finished. It has
// the shape of sim.Options.Progress.
func (b *Bar) Update(done, total int) {
	if b == nil || total <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if goesBack(done, total, b.done, b.total) {
		return
	}
	b.done, b.total = done, total
	t := b.now()
	if b.drawn.IsZero() {
		if done >= total || t.Sub(b.start) < DefaultDelay {
			return
		}
	} else if t.Sub(b.drawn) < redrawEvery && done < total {
		return
	}
	b.draw(t)
}

// goesBack reports whether done of total is a smaller share than
// before of beforeTotal.
func goesBack(done, total, before, beforeTotal int) bool {
	return beforeTotal > 0 && int64(done)*int64(beforeTotal) < int64(before)*int64(total)
}

// draw writes the bar over the previous one.
func (b *Bar) draw(t time.Time) {
	frac := min(float64(b.done)/float64(b.total), 1)
	fill := int(frac * barWidth)
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	took := t.Sub(b.start)
	left := "?"
	if b.done > 0 {
		left = (time.Duration(float64(took) * (1 - frac) / frac)).Round(time.Second).String()
	}
	line := fmt.Sprintf("%s [%s] %3d%% (%d/%d) %s, %s left", b.desc, bar, int(100*frac), b.done, b.total, took.Round(time.Second), left)
	pad := ""
	if n := len([]rune(line)); n < b.width {
		pad = strings.Repeat(" ", b.width-n)
	}
	_, _ = fmt.Fprintf(b.w, "\r%s%s", line, pad) // a failed write to the terminal: nothing to do
	b.width = max(b.width, len([]rune(line)))
	b.drawn = t
}

// Finish clears the bar from the terminal, if it was ever drawn.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.drawn.IsZero() {
		_, _ = fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", b.width))
		b.drawn = time.Time{}
	}
}
