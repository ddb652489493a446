package unherdnats

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/redelivery"
	"github.com/unherd/unherd/retry/engine"
)

// Headers set on a dead letter, beside the original message's own
// headers (those starting with "Nats-" are dropped, since the server
// would act on them).
const (
	HeaderReason     = "Unherd-Dead-Letter-Reason" // "deliveries exhausted" or "permanent failure"
	HeaderError      = "Unherd-Error"              // the last error's text, at most 1024 bytes
	HeaderStream     = "Unherd-Stream"             // the stream the message came from
	HeaderSequence   = "Unherd-Stream-Seq"         // its sequence number in that stream
	HeaderConsumer   = "Unherd-Consumer"           // the consumer that gave up on it
	HeaderSubject    = "Unherd-Subject"            // its original subject
	HeaderDeliveries = "Unherd-Deliveries"         // how many times it was delivered
)

// Reasons a message is dead-lettered, as HeaderReason gives them.
const (
	ReasonExhausted = "deliveries exhausted"
	ReasonPermanent = "permanent failure"
)

// Errors returned by Handle, CheckConsumer and the consumer's checks.
var (
	// ErrDeadLetter wraps a failure to publish a dead letter; the message
	// was negatively acknowledged with a delay instead, so it is not lost.
	ErrDeadLetter = errors.New("unherdnats: dead letter not published")
	// ErrSettle wraps a failure to acknowledge, negatively acknowledge or
	// terminate a message; the server redelivers it after AckWait.
	ErrSettle = errors.New("unherdnats: message not settled")
	// ErrConsumerConfig is wrapped by CheckConsumer's errors.
	ErrConsumerConfig = errors.New("unherdnats: consumer config")
)

// Outcome is what Handle did with a message.
type Outcome uint8

const (
	// Acked: the handler succeeded and the message was acknowledged.
	Acked Outcome = iota + 1
	// Redelivered: the handler failed and the message was negatively
	// acknowledged with the policy's delay.
	Redelivered
	// DeadLettered: the message was published to the dead-letter subject
	// (if set) and terminated.
	DeadLettered
)

var outcomeNames = [...]string{Acked: "acked", Redelivered: "redelivered", DeadLettered: "dead-lettered"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o > 0 {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result reports what Handle did with one message.
type Result struct {
	// Outcome is what happened to the message; zero if it could not be
	// settled (Handle's error says why).
	Outcome Outcome
	// Deliveries is the message's delivery count, the first included.
	Deliveries int
	// Delay is the redelivery delay when Outcome is Redelivered.
	Delay time.Duration
	// Err is the handler's error; nil when it succeeded.
	Err error
}

// Func handles one message. Return nil to acknowledge it, an error to
// have it redelivered later, or an error marked with retry.MarkPermanent
// (or classified Permanent by Consumer.Classify) to dead-letter it at
// once. It must not acknowledge the message itself.
type Func func(ctx context.Context, msg jetstream.Msg) error

// Consumer settles JetStream messages with the queue as the one retry
// loop: the handler runs once per delivery, a failure is negatively
// acknowledged with the policy's jittered, capped delay, and a message
// whose deliveries are used up, or whose failure is permanent, goes to the
// dead-letter subject. The zero value settles with the default
// redelivery.Policy and terminates exhausted messages without publishing
// them anywhere. Set its fields before first use; it is then safe for
// concurrent use.
type Consumer struct {
	// Policy gives the redelivery delays and the delivery limit.
	Policy redelivery.Policy
	// JetStream publishes dead letters; it is required when
	// DeadLetterSubject is set.
	JetStream jetstream.JetStream
	// DeadLetterSubject is where dead letters are published, with the
	// original data and the Header... headers; a stream must capture it.
	// Each is published with Nats-Msg-Id "<stream>.<sequence>", so that a
	// dead letter published again (the terminate after it failed) is
	// deduplicated within the stream's duplicate window. Empty means
	// terminate without publishing.
	DeadLetterSubject string
	// Classify tells permanent failures from others; nil means
	// engine.DefaultClassify.
	Classify func(error) failure.Class
	// Rand is the source of the delays' jitter; nil means math/rand/v2's
	// global source. It must be safe for concurrent use if messages are
	// handled concurrently.
	Rand func() uint64
}

// Handle runs fn on msg and settles the message: an acknowledgement the
// server confirms (DoubleAck) on success,
// NakWithDelay on a failure the policy redelivers, and on one it does not,
// a dead letter then Term. The returned error is about settling
// (ErrSettle, ErrDeadLetter), never the handler's own error, which is in
// Result.Err.
func (c *Consumer) Handle(ctx context.Context, msg jetstream.Msg, fn Func) (Result, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrSettle, err)
	}
	r := Result{Deliveries: int(min(meta.NumDelivered, uint64(1<<31-1)))}
	if r.Err = fn(ctx, msg); r.Err == nil {
		if err := msg.DoubleAck(ctx); err != nil {
			return r, fmt.Errorf("%w: ack: %w", ErrSettle, err)
		}
		r.Outcome = Acked
		return r, nil
	}
	class := c.classify(r.Err)
	d := c.Policy.Decide(r.Deliveries, class, c.draw())
	if !d.DeadLetter {
		return c.redeliver(msg, r, d.Delay)
	}
	reason := ReasonExhausted
	if class == failure.Permanent {
		reason = ReasonPermanent
	}
	if c.DeadLetterSubject != "" {
		if err := c.publishDeadLetter(ctx, msg, meta, reason, r); err != nil {
			// Keep the message: it comes back after the longest delay.
			res, nerr := c.redeliver(msg, r, c.Policy.Delay(r.Deliveries, c.draw()))
			return res, errors.Join(fmt.Errorf("%w: %w", ErrDeadLetter, err), nerr)
		}
	}
	// Term, not TermWithReason: servers before 2.10.4 ignore the latter
	// and would redeliver the message. The reason is in the dead letter.
	if err := msg.Term(); err != nil {
		return r, fmt.Errorf("%w: term: %w", ErrSettle, err)
	}
	r.Outcome = DeadLettered
	return r, nil
}

func (c *Consumer) redeliver(msg jetstream.Msg, r Result, delay time.Duration) (Result, error) {
	if err := msg.NakWithDelay(delay); err != nil {
		return r, fmt.Errorf("%w: nak: %w", ErrSettle, err)
	}
	r.Outcome, r.Delay = Redelivered, delay
	return r, nil
}

func (c *Consumer) publishDeadLetter(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, reason string, r Result) error {
	if c.JetStream == nil {
		return errors.New("Consumer.JetStream is nil")
	}
	h := nats.Header{}
	for k, v := range msg.Headers() {
		if !strings.HasPrefix(k, "Nats-") {
			h[k] = v
		}
	}
	text := r.Err.Error()
	if len(text) > 1024 {
		text = text[:1024]
	}
	h.Set(HeaderReason, reason)
	h.Set(HeaderError, text)
	h.Set(HeaderStream, meta.Stream)
	h.Set(HeaderSequence, strconv.FormatUint(meta.Sequence.Stream, 10))
	h.Set(HeaderConsumer, meta.Consumer)
	h.Set(HeaderSubject, msg.Subject())
	h.Set(HeaderDeliveries, strconv.Itoa(r.Deliveries))
	h.Set(jetstream.MsgIDHeader, meta.Stream+"."+strconv.FormatUint(meta.Sequence.Stream, 10))
	_, err := c.JetStream.PublishMsg(ctx, &nats.Msg{Subject: c.DeadLetterSubject, Header: h, Data: msg.Data()})
	return err
}

// Handler adapts fn to jetstream.MessageHandler, for Consumer.Consume:
// each message is handled with ctx and settled by Handle. onErr, if not
// nil, receives every settling error with its message; the server
// redelivers such a message after AckWait.
func (c *Consumer) Handler(ctx context.Context, fn Func, onErr func(jetstream.Msg, error)) jetstream.MessageHandler {
	return func(msg jetstream.Msg) {
		if _, err := c.Handle(ctx, msg, fn); err != nil && onErr != nil {
			onErr(msg, err)
		}
	}
}

// CheckConsumer reports a consumer configuration that defeats the policy:
// an acknowledgement policy other than explicit (a negative acknowledgement
// then means nothing), or a MaxDeliver at or below the policy's
// MaxDeliveries, at which the server stops redelivering before the dead
// letter is written (leave MaxDeliver unlimited, -1 or 0, or set it
// above). Server-side BackOff is reported too: it applies only to acks
// that time out, without jitter, and a second schedule beside the policy's
// is confusing.
func (c *Consumer) CheckConsumer(cfg jetstream.ConsumerConfig) error {
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConsumerConfig, err)
	}
	limit := c.Policy.MaxDeliveries
	if limit == 0 {
		limit = redelivery.DefaultMaxDeliveries
	}
	switch {
	case cfg.AckPolicy != jetstream.AckExplicitPolicy:
		return fmt.Errorf("%w: AckPolicy is %v; redelivery needs explicit acks", ErrConsumerConfig, cfg.AckPolicy)
	case cfg.MaxDeliver > 0 && cfg.MaxDeliver <= limit:
		return fmt.Errorf("%w: MaxDeliver %d is not above the policy's %d deliveries; the server would drop the message before its dead letter", ErrConsumerConfig, cfg.MaxDeliver, limit)
	case len(cfg.BackOff) > 0:
		return fmt.Errorf("%w: BackOff is set; leave redelivery delays to the policy (BackOff applies only to expired acks, without jitter)", ErrConsumerConfig)
	}
	return nil
}

func (c *Consumer) classify(err error) failure.Class {
	if c.Classify != nil {
		return c.Classify(err)
	}
	return engine.DefaultClassify(err)
}

func (c *Consumer) draw() uint64 {
	if c.Rand != nil {
		return c.Rand()
	}
	return rand.Uint64()
}
