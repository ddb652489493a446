package unherdnats_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/unherd/unherd/internal/await"
	"github.com/unherd/unherd/internal/services"
	"go.uber.org/goleak"
)

// Every test closes its connections and stops its consumers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one test's JetStream: a connection, and a stream and a dead-letter
// stream of its own, named after the test, deleted when it ends.
type env struct {
	js      jetstream.JetStream
	stream  string // stream name
	subject string // subject the stream captures
	dead    string // dead-letter subject, captured by stream+"_DLQ"
}

func newEnv(t *testing.T) *env {
	t.Helper()
	nc, err := nats.Connect(services.NATSURL(), nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if err != nil {
		services.Unavailable(t, "NATS at %s is unreachable: %v", services.NATSURL(), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		services.Unavailable(t, "NATS at %s has no JetStream: %v", services.NATSURL(), err)
	}
	name := strings.NewReplacer("/", "_", " ", "_", "-", "_").Replace(t.Name())
	name = "UNHERD_" + strings.ToUpper(name) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	e := &env{js: js, stream: name, subject: strings.ToLower(name), dead: strings.ToLower(name) + ".dlq"}
	for _, sc := range []jetstream.StreamConfig{
		{Name: e.stream, Subjects: []string{e.subject}},
		{Name: e.stream + "_DLQ", Subjects: []string{e.dead}, Duplicates: time.Minute},
	} {
		if _, err := js.CreateStream(ctx, sc); err != nil {
			t.Fatalf("create stream %s: %v", sc.Name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = js.DeleteStream(ctx, sc.Name)
		})
	}
	return e
}

// consumer creates a durable pull consumer on the test's stream with
// explicit acks and unlimited deliveries.
func (e *env) consumer(t *testing.T) jetstream.Consumer {
	t.Helper()
	c, err := e.js.CreateOrUpdateConsumer(t.Context(), e.stream, jetstream.ConsumerConfig{
		Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) publish(t *testing.T, data string, h nats.Header) {
	t.Helper()
	if _, err := e.js.PublishMsg(t.Context(), &nats.Msg{Subject: e.subject, Data: []byte(data), Header: h}); err != nil {
		t.Fatal(err)
	}
}

// next fetches one message, failing t if none comes within 5 s.
func next(t *testing.T, c jetstream.Consumer) jetstream.Msg {
	t.Helper()
	m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatalf("no message: %v", err)
	}
	return m
}

// none reports a message that arrives within wait.
func none(t *testing.T, c jetstream.Consumer, wait time.Duration) {
	t.Helper()
	if m, err := c.Next(jetstream.FetchMaxWait(wait)); err == nil {
		t.Errorf("unexpected message %q", m.Data())
	}
}

// settled waits until the consumer has nothing pending: every message
// acknowledged or terminated (an ack or a term is sent without waiting
// for the server, so it may still be on its way). It fails t after 5 s.
func settled(t *testing.T, c jetstream.Consumer) {
	t.Helper()
	var info *jetstream.ConsumerInfo
	var err error
	done := await.Until(5*time.Second, 10*time.Millisecond, func() bool {
		info, err = c.Info(t.Context())
		return err != nil || info.NumAckPending == 0 && info.NumPending == 0
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case !done:
		t.Fatalf("after 5 s: %d messages wait for an ack, %d for delivery", info.NumAckPending, info.NumPending)
	}
}
