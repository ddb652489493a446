package unherdnats_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/unherd/unherd/unherdnats"
)

// CheckConsumer catches a consumer configuration under which the server
// would stop redelivering before the dead letter is written.
func ExampleConsumer_CheckConsumer() {
	var c unherdnats.Consumer // default policy: 8 deliveries
	err := c.CheckConsumer(jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5})
	fmt.Println(err)
	fmt.Println(c.CheckConsumer(jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1}))
	// Output:
	// unherdnats: consumer config: MaxDeliver 5 is not above the policy's 8 deliveries; the server would drop the message before its dead letter
	// <nil>
}

// The whole wiring: a stream, its dead-letter stream, a consumer, and the
// handler (it needs a NATS server with JetStream, so it is not run).
func ExampleConsumer_Handler() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	_, _ = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders"}})
	_, _ = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS_DLQ", Subjects: []string{"orders.dlq"}, Duplicates: time.Hour})
	cfg := jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}
	c := &unherdnats.Consumer{JetStream: js, DeadLetterSubject: "orders.dlq"}
	if err := c.CheckConsumer(cfg); err != nil {
		log.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", cfg)
	if err != nil {
		log.Fatal(err)
	}
	cc, err := cons.Consume(c.Handler(ctx, func(ctx context.Context, m jetstream.Msg) error {
		return nil // process m.Data(); an error redelivers it later
	}, func(m jetstream.Msg, err error) { log.Print(err) }))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Stop()
}
