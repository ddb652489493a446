package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// DefaultDelay is how long a Bar stays silent before it first draws.
const DefaultDelay = time.Second

// IsTerminal reports whether w is a terminal, where a bar makes sense.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Bar is a progress bar that appears only once its work has taken longer
// than Delay. A nil *Bar is valid and does nothing. Its methods are safe
// for concurrent use.
type Bar struct {
	w     io.Writer
	desc  string
	now   func() time.Time
	start time.Time

	mu  sync.Mutex
	bar *progressbar.ProgressBar
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
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		if done >= total || b.now().Sub(b.start) < DefaultDelay {
			return
		}
		b.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription(b.desc),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		// Draw the state so far at once; later updates are throttled.
		_ = b.bar.Set(done)
		_ = b.bar.RenderBlank()
		return
	}
	if total != b.bar.GetMax() {
		b.bar.ChangeMax(total)
	}
	_ = b.bar.Set(done) // writing to the terminal failed: nothing to do
}

// Finish clears the bar from the terminal, if it was ever drawn.
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
		b.bar = nil
	}
}
