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

func TestRecorderReleased(t *testing.T) {
	start := time.Unix(0, 0)
	for _, tt := range []struct {
		name    string
		release func(limit.Token)
		want    string
	}{
		{"served", func(tok limit.Token) { tok.Served(start.Add(time.Second)) }, "served"},
		{"dropped", func(tok limit.Token) { tok.Dropped(start.Add(time.Second)) }, "dropped"},
		{"ignored", func(tok limit.Token) { tok.Ignore() }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &limittest.Recorder{N: 2}
			l, err := limit.New(limit.Config{Algorithm: r})
			if err != nil {
				t.Fatal(err)
			}
			tok, _ := l.Acquire(start)
			tt.release(tok)
			if got, err := r.Released(); got != tt.want || err != nil {
				t.Errorf("Released() = %q, %v; want %q, nil", got, err, tt.want)
			}
		})
	}
	r := &limittest.Recorder{N: 2}
	r.Update(limit.Sample{})
	r.Update(limit.Sample{})
	if _, err := r.Released(); err == nil {
		t.Error("Released() with two samples: no error")
	}
}
