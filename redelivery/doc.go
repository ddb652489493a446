// Package redelivery computes a queue's redelivery delay for a message
// that failed, and when to stop redelivering it.
//
// On a queue, backoff is the redelivery delay: a consumer that fails a
// message hands it back with a delay (NATS JetStream's NakWithDelay, SQS's
// ChangeMessageVisibility, RabbitMQ's delayed requeue) and returns to the
// next message. A [Policy] gives that delay for the delivery count the
// queue reports, capped and jittered on a backoff.Schedule, and says when
// a message has had its deliveries and goes to the dead letters:
//
//	var p redelivery.Policy // 5 s base, 5 min cap, full jitter, 8 deliveries
//	d := p.Decide(meta.NumDelivered, class, rand.Uint64())
//	if d.DeadLetter {
//		// publish to the dead-letter subject, then terminate the message
//	} else {
//		msg.NakWithDelay(d.Delay)
//	}
//
// Package unherdnats (a nested module) does exactly that for a JetStream
// consumer.
//
// # Retry at one layer
//
// Do not retry inside the consumer as well. A handler that wraps its work
// in retry.Do with 3 attempts, on a queue that delivers 8 times, makes up
// to 24 attempts per message, and holds the message (and the consumer's
// slot, and the ack deadline) through the in-process backoff, where the
// queue's delay would have let other messages through. Let the queue be
// the retry loop: fail fast in the handler and let the redelivery delay
// space the attempts. Calls made while handling a message can carry
// retry.WithOuterRetry on their context, so that the retry policies below
// them do not retry either: the queue is the one layer that retries.
//
// # Delivery count
//
// Delay and Exhausted take the count of deliveries so far, the first
// included, as the queue reports it: delivery 1 failing waits up to Base,
// delivery 2 up to 2*Base, and so on to Cap. Decorrelated jitter needs the
// previous delay, which the queue does not carry with the message; the
// previous retry's ceiling stands in for it. Full jitter, the default, has
// no such need.
package redelivery
