package unherdnats_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/redelivery"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdnats"
)

var errDown = errors.New("dependency down")

func fail(err error) unherdnats.Func {
	return func(context.Context, jetstream.Msg) error { return err }
}

func TestAck(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "hello", nil)
	var c unherdnats.Consumer
	var got string
	r, err := c.Handle(t.Context(), next(t, cons), func(_ context.Context, m jetstream.Msg) error {
		got = string(m.Data())
		return nil
	})
	if err != nil || r.Outcome != unherdnats.Acked || r.Deliveries != 1 || got != "hello" {
		t.Fatalf("Handle = %+v, %v (data %q); want acked on the first delivery", r, err, got)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("after the ack: %d pending ack, %d pending", info.NumAckPending, info.NumPending)
	}
}

// TestRedeliverWithDelay: each failure is negatively acknowledged with the
// policy's delay, and the server holds the message back at least that
// long.
func TestRedeliverWithDelay(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "job", nil)
	c := unherdnats.Consumer{Policy: redelivery.Policy{Base: 100 * time.Millisecond, Jitter: backoff.None, MaxDeliveries: 5}}
	msg := next(t, cons)
	for delivered, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		r, err := c.Handle(t.Context(), msg, fail(errDown))
		if err != nil || r.Outcome != unherdnats.Redelivered || r.Delay != want || r.Deliveries != delivered+1 || !errors.Is(r.Err, errDown) {
			t.Fatalf("delivery %d: Handle = %+v, %v; want redelivered after %v", delivered+1, r, err, want)
		}
		naked := time.Now()
		msg = next(t, cons)
		if waited := time.Since(naked); waited < want {
			t.Errorf("delivery %d came back after %v, before the %v delay", delivered+2, waited, want)
		}
	}
	if r, err := c.Handle(t.Context(), msg, fail(nil)); err != nil || r.Outcome != unherdnats.Acked || r.Deliveries != 4 {
		t.Errorf("fourth delivery: Handle = %+v, %v; want acked", r, err)
	}
}

// TestDeadLetterExhausted: the MaxDeliveries-th failure publishes a dead
// letter carrying the message, its headers and where it came from, and
// terminates the original.
func TestDeadLetterExhausted(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "order 42", nats.Header{"Trace": []string{"abc"}})
	c := unherdnats.Consumer{JetStream: e.js, DeadLetterSubject: e.dead,
		Policy: redelivery.Policy{Base: time.Millisecond, Jitter: backoff.None, MaxDeliveries: 3}}
	var last unherdnats.Result
	for i := range 3 {
		r, err := c.Handle(t.Context(), next(t, cons), fail(errDown))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]unherdnats.Outcome{true: unherdnats.DeadLettered, false: unherdnats.Redelivered}[i == 2]; r.Outcome != want {
			t.Fatalf("delivery %d: outcome %v, want %v", i+1, r.Outcome, want)
		}
		last = r
	}
	if last.Deliveries != 3 {
		t.Errorf("dead-lettered at delivery %d, want 3", last.Deliveries)
	}
	settled(t, cons)
	dead := deadLetters(t, e, 1)[0]
	h := dead.Headers()
	want := map[string]string{
		unherdnats.HeaderReason: unherdnats.ReasonExhausted, unherdnats.HeaderError: "dependency down",
		unherdnats.HeaderStream: e.stream, unherdnats.HeaderSequence: "1", unherdnats.HeaderConsumer: "worker",
		unherdnats.HeaderSubject: e.subject, unherdnats.HeaderDeliveries: "3", "Trace": "abc",
		jetstream.MsgIDHeader: e.stream + ".1",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("dead letter header %s = %q, want %q", k, got, v)
		}
	}
	if string(dead.Data()) != "order 42" {
		t.Errorf("dead letter data %q", dead.Data())
	}
}

// deadLetters reads n messages from the test's dead-letter stream.
func deadLetters(t *testing.T, e *env, n int) []jetstream.Msg {
	t.Helper()
	dc, err := e.js.OrderedConsumer(t.Context(), e.stream+"_DLQ", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for range n {
		out = append(out, next(t, dc))
	}
	none(t, dc, 200*time.Millisecond)
	return out
}

func TestDeadLetterPermanent(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "not json", nil)
	c := unherdnats.Consumer{JetStream: e.js, DeadLetterSubject: e.dead}
	r, err := c.Handle(t.Context(), next(t, cons), fail(retry.MarkPermanent(errors.New("cannot parse"))))
	if err != nil || r.Outcome != unherdnats.DeadLettered || r.Deliveries != 1 {
		t.Fatalf("Handle = %+v, %v; want dead-lettered at the first delivery", r, err)
	}
	if got := deadLetters(t, e, 1)[0].Headers().Get(unherdnats.HeaderReason); got != unherdnats.ReasonPermanent {
		t.Errorf("reason %q, want %q", got, unherdnats.ReasonPermanent)
	}
	settled(t, cons)
}

// TestDeadLetterUnpublished: when the dead letter cannot be published (no
// stream captures its subject), the message is kept for redelivery.
func TestDeadLetterUnpublished(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "job", nil)
	c := unherdnats.Consumer{JetStream: e.js, DeadLetterSubject: e.subject + ".nowhere",
		Policy: redelivery.Policy{Base: 50 * time.Millisecond, Jitter: backoff.None, MaxDeliveries: 1}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	r, err := c.Handle(ctx, next(t, cons), fail(errDown))
	if !errors.Is(err, unherdnats.ErrDeadLetter) || r.Outcome != unherdnats.Redelivered {
		t.Fatalf("Handle = %+v, %v; want ErrDeadLetter and the message redelivered", r, err)
	}
	if m := next(t, cons); m == nil {
		t.Fatal("message lost")
	}
}

// TestTerminateWithoutSubject: with no dead-letter subject, an exhausted
// message is terminated and not seen again.
func TestTerminateWithoutSubject(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	e.publish(t, "job", nil)
	c := unherdnats.Consumer{Policy: redelivery.Policy{MaxDeliveries: 1}}
	r, err := c.Handle(t.Context(), next(t, cons), fail(errDown))
	if err != nil || r.Outcome != unherdnats.DeadLettered {
		t.Fatalf("Handle = %+v, %v; want dead-lettered", r, err)
	}
	settled(t, cons)
}

// TestConsume runs Handler under Consume: of 20 messages, every third
// fails once and then succeeds, one fails permanently; all are settled.
func TestConsume(t *testing.T) {
	e := newEnv(t)
	cons := e.consumer(t)
	const n = 20
	for i := range n {
		e.publish(t, string(rune('a'+i)), nil)
	}
	c := unherdnats.Consumer{JetStream: e.js, DeadLetterSubject: e.dead,
		Policy: redelivery.Policy{Base: 20 * time.Millisecond, MaxDeliveries: 3}}
	var (
		mu        sync.Mutex
		done      = map[string]bool{}
		failed    = map[string]bool{}
		settleErr error
	)
	finished := make(chan struct{})
	handler := c.Handler(t.Context(), func(_ context.Context, m jetstream.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		d := string(m.Data())
		if d == "e" {
			done[d] = true
			if len(done) == n {
				close(finished)
			}
			return retry.MarkPermanent(errors.New("bad message"))
		}
		if (d[0]-'a')%3 == 0 && !failed[d] {
			failed[d] = true
			return errDown
		}
		done[d] = true
		if len(done) == n {
			close(finished)
		}
		return nil
	}, func(_ jetstream.Msg, err error) {
		mu.Lock()
		settleErr = err
		mu.Unlock()
	})
	cc, err := cons.Consume(handler)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Error("not every message was handled within 10 s")
	}
	cc.Drain()
	await.Recv(t, cc.Closed(), "the consumer to close after draining")
	if settleErr != nil {
		t.Errorf("settling: %v", settleErr)
	}
	if got := deadLetters(t, e, 1)[0]; string(got.Data()) != "e" {
		t.Errorf("dead letter %q, want e", got.Data())
	}
	settled(t, cons)
}

func TestCheckConsumer(t *testing.T) {
	explicit := jetstream.AckExplicitPolicy
	tests := []struct {
		name string
		cfg  jetstream.ConsumerConfig
		ok   bool
	}{
		{"unlimited deliveries", jetstream.ConsumerConfig{AckPolicy: explicit, MaxDeliver: -1}, true},
		{"zero means unlimited", jetstream.ConsumerConfig{AckPolicy: explicit}, true},
		{"above the policy", jetstream.ConsumerConfig{AckPolicy: explicit, MaxDeliver: 9}, true},
		{"at the policy's 8", jetstream.ConsumerConfig{AckPolicy: explicit, MaxDeliver: 8}, false},
		{"ack none", jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy}, false},
		{"server backoff", jetstream.ConsumerConfig{AckPolicy: explicit, BackOff: []time.Duration{time.Second}}, false},
	}
	var c unherdnats.Consumer
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.CheckConsumer(tt.cfg)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, unherdnats.ErrConsumerConfig)) {
				t.Errorf("CheckConsumer = %v, want ok=%v (errors wrap ErrConsumerConfig)", err, tt.ok)
			}
		})
	}
	bad := unherdnats.Consumer{Policy: redelivery.Policy{Base: -1}}
	if err := bad.CheckConsumer(jetstream.ConsumerConfig{AckPolicy: explicit}); !errors.Is(err, redelivery.ErrInvalid) {
		t.Errorf("invalid policy: %v", err)
	}
}

func TestOutcomeString(t *testing.T) {
	got := []string{unherdnats.Acked.String(), unherdnats.Redelivered.String(), unherdnats.DeadLettered.String(), unherdnats.Outcome(9).String()}
	if strings.Join(got, ",") != "acked,redelivered,dead-lettered,Outcome(9)" {
		t.Errorf("names %v", got)
	}
}
