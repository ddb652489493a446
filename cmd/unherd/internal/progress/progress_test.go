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
