package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a manual clock for the Bar.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestSilentWhenQuick(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := New(&out, "jitter", c.now)
	for i := range 10 {
		c.t = c.t.Add(90 * time.Millisecond)
		b.Update(i, 10)
	}
	b.Update(10, 10)
	b.Finish()
	if out.Len() != 0 {
		t.Fatalf("quick work drew %q", out.String())
	}
}

func TestDrawsAfterDelayAndClears(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := New(&out, "jitter", c.now)
	b.Update(1, 100)
	if out.Len() != 0 {
		t.Fatalf("drew before the delay: %q", out.String())
	}
	c.t = c.t.Add(DefaultDelay)
	b.Update(2, 100)
	if s := out.String(); !strings.Contains(s, "jitter") || !strings.Contains(s, "2/100") {
		t.Fatalf("bar %q lacks its label or count", s)
	}
	drawn := out.Len()
	b.Finish()
	if out.Len() == drawn {
		t.Fatal("Finish did not clear the bar")
	}
}

func TestFinishedBeforeDelayNeverDraws(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := New(&out, "x", c.now)
	c.t = c.t.Add(5 * time.Second)
	b.Update(3, 3) // the only report is the last one
	b.Finish()
	if out.Len() != 0 {
		t.Fatalf("drew %q for work already done", out.String())
	}
}

func TestNilBar(t *testing.T) {
	var b *Bar
	b.Update(1, 2)
	b.Finish()
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
}

func TestLines(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	l := NewLines(&out, "report: hedge", c.now)
	for i := range 100 {
		c.t = c.t.Add(100 * time.Millisecond) // 10 s in all
		l.Update(i, 100)
	}
	l.Update(100, 100)
	l.Finish()
	want := "report: hedge 9% (9/100) after 1s\n" +
		"report: hedge 39% (39/100) after 4s\n" +
		"report: hedge 69% (69/100) after 7s\n" +
		"report: hedge 99% (99/100) after 10s\n" +
		"report: hedge 100% (100/100) after 10s\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestLinesQuiet(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	l := NewLines(&out, "jitter", c.now)
	l.Update(5, 10)
	c.t = c.t.Add(500 * time.Millisecond)
	l.Update(10, 10)
	l.Finish()
	var nilLines *Lines
	nilLines.Update(1, 2)
	nilLines.Finish()
	if out.Len() != 0 {
		t.Fatalf("quick work wrote %q", out.String())
	}
}

// TestLinesDetail: a detail follows each line's figures after a colon,
// and an empty one adds nothing.
func TestLinesDetail(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var out bytes.Buffer
	l := NewLines(&out, "report", c.now)
	detail := "hedge 40%"
	l.Detail(func() string { return detail })
	c.t = c.t.Add(DefaultDelay)
	l.Update(1, 2)
	detail = ""
	l.Finish()
	want := "report 50% (1/2) after 1s: hedge 40%\n" + "report 50% (1/2) after 1s\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	var nilLines *Lines
	nilLines.Detail(func() string { return "x" })
}

// TestBarRemainingTime: the bar predicts the time left from the work's
// own clock: 10% done after 1 s leaves 9 s, half done after 4 s leaves 4 s.
func TestBarRemainingTime(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := New(&out, "whatif", c.now)
	c.t = c.t.Add(time.Second)
	b.Update(10, 100)
	if s := out.String(); !strings.Contains(s, "9s left") {
		t.Errorf("10%% after 1 s: bar %q does not say 9s left", s)
	}
	c.t = c.t.Add(3 * time.Second)
	out.Reset()
	b.Update(50, 100)
	if s := out.String(); !strings.Contains(s, "4s left") {
		t.Errorf("50%% after 4 s: bar %q does not say 4s left", s)
	}
	b.Finish()
}

// TestNeverGoesBack: a report of less done than before (a later stage
// counting from zero) leaves the bar and the lines where they were.
func TestNeverGoesBack(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := New(&out, "whatif", c.now)
	var lout bytes.Buffer
	l := NewLines(&lout, "whatif", c.now)
	c.t = c.t.Add(time.Second)
	b.Update(50, 100)
	l.Update(50, 100)
	c.t = c.t.Add(DefaultInterval)
	out.Reset()
	b.Update(0, 100)
	l.Update(1, 200)
	if s := out.String(); strings.Contains(s, " 0%") || strings.Contains(s, "(0/100)") {
		t.Errorf("the bar went back: %q", s)
	}
	if s := lout.String(); strings.Contains(s, " 0% ") {
		t.Errorf("the lines went back: %q", s)
	}
	b.Finish()
	l.Finish()
}
