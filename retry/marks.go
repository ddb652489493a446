package retry

import "context"

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

func (m *marks) walk(err error) {
	for err != nil {
		switch err.(type) {
		case *permanentError:
			m.permanent = true
		case *finalError:
			m.final = true
		case *throttledError:
			m.throttled = true
		}
		// The sentinels' dynamic types are pointers, so these comparisons
		// never panic on a non-comparable error type.
		switch err {
		case ErrRejected:
			m.rejected = true
		case ErrPermanent:
			m.permanent = true
		case ErrFinal:
			m.final = true
		case context.Canceled:
			m.canceled = true
		}
		if is, ok := err.(interface{ Is(error) bool }); ok {
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
			if t, ok := err.(interface{ Timeout() bool }); ok {
				m.timeout = t
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				m.walk(e)
			}
			return
		default:
			return
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
