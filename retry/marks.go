package retry

// marks is what the retry decision needs to know about an error tree,
// gathered in one walk: a failed attempt's error used to be walked seven
// times (four for classification, then rejection, final and server delay),
// which was most of the cost of a retry.
type marks struct {
	permanent, final, throttled, rejected bool
	// serverDelay is the first ServerDelay in the tree, if any.
	serverDelay ServerDelay
	// timeout is the first error in the tree with a Timeout() bool method,
	// if any; its answer decides the Timeout class, as errors.As would.
	timeout interface{ Timeout() bool }
}

// inspect walks err's tree once, depth first and pre-order like errors.Is
// and errors.As, and records the first of each mark it finds. rejected
// follows errors.Is(err, ErrRejected) exactly: a node equal to ErrRejected
// or with an Is method that reports it.
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
		if !m.rejected {
			// ErrRejected's dynamic type is a pointer, so this comparison
			// never panics on a non-comparable error type.
			if err == ErrRejected {
				m.rejected = true
			} else if is, ok := err.(interface{ Is(error) bool }); ok && is.Is(ErrRejected) {
				m.rejected = true
			}
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
	}
	return Transient
}
