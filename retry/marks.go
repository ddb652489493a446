package retry

import (
	"context"
	"time"
)

// marks is what the retry decision needs to know about an error tree,
// gathered in one walk: a failed attempt's error used to be walked seven
// times (four for classification, then rejection, final and server delay),
// which was most of the cost of a retry.
type marks struct {
	permanent, final, throttled, rejected, canceled bool
	// serverDelay is the first ServerDelay in the tree, if any.
	serverDelay ServerDelay
	// timeout is the first error in the tree with a Timeout() bool method,
	// if any; its answer decides the Timeout class, as errors.As would.
	timeout interface{ Timeout() bool }
}

// inspect walks err's tree once, depth first and pre-order like errors.Is
// and errors.As, and records the first of each mark it finds. rejected,
// permanent, final and canceled follow errors.Is exactly, for ErrRejected,
// ErrPermanent, ErrFinal and context.Canceled: a node equal to the
// sentinel or with an Is method that reports it. So an operation that
// returns ErrPermanent itself, or an inner Policy's *Error that stopped
// with it, is permanent here too.
func inspect(err error) (m marks) {
	m.walk(err)
	return m
}

// The method sets walk looks for. A ServerDelay is any error with a
// RetryAfter method.
type (
	isser        = interface{ Is(error) bool }
	delayer      = interface{ RetryAfter() time.Duration }
	timeouter    = interface{ Timeout() bool }
	unwrapper    = interface{ Unwrap() error }
	multiWrapper = interface{ Unwrap() []error }
)

func (m *marks) walk(err error) {
	for err != nil {
		// One type switch sorts the node: the package's own wrappers and
		// sentinels by their concrete types (type-word comparisons), then
		// the rest by method set, in one cached look-up (where separate
		// assertions cost one look-up each). The cases are tried in
		// order, so a node reaches the unwrapper, multiWrapper and
		// default cases only without Is, RetryAfter and Timeout methods.
		// Every case records exactly what inspectNode would: a node can
		// equal one of the package's sentinels only if it is a *sentinel,
		// and context.Canceled only if it has no method but Error.
		switch e := err.(type) {
		case *throttledError:
			m.throttled = true
			err = e.err
		case *afterError:
			if m.serverDelay == nil {
				m.serverDelay = e
			}
			err = e.err
		case *permanentError:
			m.permanent = true
			err = e.err
		case *finalError:
			m.final = true
			err = e.err
		case *sentinel:
			// No Is, Unwrap, RetryAfter or Timeout method: a leaf.
			switch e {
			case ErrRejected:
				m.rejected = true
			case ErrPermanent:
				m.permanent = true
			case ErrFinal:
				m.final = true
			}
			return
		case *Error:
			// Unwrap without the slice it allocates: the same nodes in
			// the same order, nil ones left out.
			m.walk(e.Reason)
			m.walk(e.Last)
			m.walk(e.Cause)
			return
		case isser, delayer, timeouter:
			m.inspectNode(err)
			err = m.below(err)
		case unwrapper:
			err = e.Unwrap()
		case multiWrapper:
			m.walkAll(e.Unwrap())
			return
		default:
			// Only such a node can be context.Canceled, whose type has
			// no method but Error. Its dynamic type is a pointer, so the
			// comparison never panics on a non-comparable error type.
			m.canceled = m.canceled || err == context.Canceled
			return
		}
	}
}

// below walks what a node with marks of its own wraps: it returns the
// one error it wraps, to walk next, or walks the several it wraps and
// returns nil, as it does for a leaf.
func (m *marks) below(err error) error {
	switch u := err.(type) {
	case unwrapper:
		return u.Unwrap()
	case multiWrapper:
		m.walkAll(u.Unwrap())
	}
	return nil
}

// walkAll walks each of errs in turn.
func (m *marks) walkAll(errs []error) {
	for _, e := range errs {
		m.walk(e)
	}
}

// inspectNode records the marks of one node of an error tree with an Is,
// RetryAfter or Timeout method, not looking below it: errors.Is's test of
// the node's Is method for ErrRejected, ErrPermanent, ErrFinal and
// context.Canceled, and the node as the tree's first ServerDelay or first
// error with a Timeout method if there was none before it. Such a node
// never equals one of those sentinels (theirs have none of the three
// methods), so walk's own cases are the only ones to compare with them.
func (m *marks) inspectNode(err error) {
	if is, ok := err.(isser); ok {
		m.rejected = m.rejected || is.Is(ErrRejected)
		m.permanent = m.permanent || is.Is(ErrPermanent)
		m.final = m.final || is.Is(ErrFinal)
		m.canceled = m.canceled || is.Is(context.Canceled)
	}
	if m.serverDelay == nil {
		if sd, ok := err.(ServerDelay); ok {
			m.serverDelay = sd
		}
	}
	if m.timeout == nil {
		if t, ok := err.(timeouter); ok {
			m.timeout = t
		}
	}
}

// class is the class of err, whose marks m are: classify's answer if it
// is set, else DefaultClassify's rule applied to the marks.
func (m *marks) class(classify func(error) Class, err error) Class {
	if classify != nil {
		return classify(err)
	}
	switch {
	case m.permanent:
		return Permanent
	case m.serverDelay != nil && m.serverDelay.RetryAfter() < 0:
		return Permanent
	case m.throttled:
		return Throttled
	case m.timeout != nil && m.timeout.Timeout():
		return Timeout
	case m.canceled:
		return Permanent
	}
	return Transient
}
