// Package unherdnats settles NATS JetStream messages with the queue as
// the one retry loop: a failed message is negatively acknowledged with a
// jittered, capped delay (NakWithDelay), and a message that has had its
// deliveries, or that failed permanently, goes to a dead-letter subject.
//
// Build a [Consumer] once, check the JetStream consumer's configuration
// with it, and hand its Handler to Consume (or call Handle on each
// fetched message):
//
//	c := &unherdnats.Consumer{JetStream: js, DeadLetterSubject: "orders.dlq"}
//	if err := c.CheckConsumer(cfg); err != nil { ... }
//	cc, err := cons.Consume(c.Handler(ctx, func(ctx context.Context, m jetstream.Msg) error {
//		return process(ctx, m.Data()) // nil acks; an error redelivers later
//	}, logSettleError))
//
// The delays come from a redelivery.Policy (the zero value: full jitter,
// 5 s base doubling to a 5 min cap, a dead letter once the 8th delivery
// fails). Mark an error retry.MarkPermanent, or classify it Permanent with
// Consumer.Classify, for a message that no redelivery can fix: it is
// dead-lettered at once. A dead letter carries the original data and
// headers and says why, from where and after how many deliveries
// (HeaderReason and the other Header constants).
//
// # Do not retry in the handler
//
// The queue already retries: each negative acknowledgement is one retry,
// spaced by the policy. A handler that also retries its calls (retry.Do
// with 3 attempts on a queue delivering 8 times: up to 24 attempts per
// message) multiplies the load on a failing dependency, holds the
// message's ack deadline through its own backoff, and keeps the consumer
// from other messages meanwhile. Fail fast in the handler; pass
// retry.WithOuterRetry(ctx) to the calls it makes, so that their policies
// do not retry either. See package redelivery.
//
// # The consumer's configuration
//
// The JetStream consumer must use explicit acks. Leave its MaxDeliver
// unlimited, or above the policy's MaxDeliveries: at or below it, the
// server stops delivering before the dead letter is written. Leave its
// BackOff empty: it applies only to acknowledgements that time out, and
// without jitter. AckWait must exceed the handler's longest run, or the
// server redelivers a message still being handled. CheckConsumer reports
// the first three.
//
// A dead letter is published with Nats-Msg-Id "<stream>.<sequence>", so
// a dead letter published twice (the terminate after it lost) is
// deduplicated within the dead-letter stream's duplicate window. The
// original is then terminated with Term; the reason is in the dead
// letter's headers rather than in TermWithReason, which servers before
// 2.10.4 ignore (they would redeliver the message).
//
// Tests run against the NATS server at UNHERD_NATS_URL (default
// nats://127.0.0.1:4222) with JetStream enabled; they skip when it is
// unreachable, unless UNHERD_REQUIRE_SERVICES=1.
package unherdnats
