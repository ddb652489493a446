package limittest_test

import (
	"testing"
	"time"

	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/limit/limittest"
)

func TestRecorder(t *testing.T) {
	r := &limittest.Recorder{N: 2}
	l, err := limit.New(limit.Config{Algorithm: r})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, 0)
	a, _ := l.Acquire(start)
	b, _ := l.Acquire(start)
	if _, ok := l.Acquire(start); ok {
		t.Fatal("a third request admitted under a limit of 2")
	}
	a.Served(start.Add(time.Second))
	b.Ignore()
	s := r.Samples()
	if len(s) != 1 || s[0].RTT != time.Second || s[0].Dropped || l.Limit() != 2 {
		t.Errorf("samples %+v, limit %d; want one served sample of 1s and the limit 2", s, l.Limit())
	}
}
