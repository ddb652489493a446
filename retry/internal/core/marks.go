package core

import (
	"context"
	"time"

	"github.com/unherd/unherd/failure"
)

// marks is what the retry decision needs to know about an error tree,
// gathered in one walk: the verdicts in it ([Judge]) and what errors.Is
// and errors.As would find of the package's sentinels, context.Canceled,
// server delays and timeouts, asked of every node at once.
type marks struct {
	flags markFlags
	// serverDelay is the first ServerDelay in the tree, if any.
	serverDelay serverDelay
	// timeout is the first error in the tree with a Timeout() bool method,
	// if any; its answer decides the Timeout class, as errors.As would.
	timeout interface{ Timeout() bool }
}

// markFlags are the marks of a tree that are yes or no.
type markFlags uint8

const (
	permanentMark markFlags = 1 << iota // ErrPermanent, or a Permanent verdict
	finalMark                           // ErrFinal, or a Final verdict
	throttledMark                       // a Throttled verdict
	timedOutMark                        // a Timeout verdict
	rejectedMark                        // ErrRejected
	canceledMark                        // context.Canceled
)

// has reports whether the tree has any of the marks f.
func (m *marks) has(f markFlags) bool { return m.flags&f != 0 }

// set records the marks f when ok.
func (m *marks) set(f markFlags, ok bool) {
	if ok {
		m.flags |= f
	}
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
	isser     = interface{ Is(error) bool }
	delayer   = interface{ RetryAfter() time.Duration }
	timeouter = interface{ Timeout() bool }
)

// walk records the marks of err's tree. One type switch per node sorts
// it and finds what lies below it: the package's own verdicts and
// sentinels by their concrete types, then the rest by method set. A node
// can equal one of the package's sentinels only if it is a *sentinel,
// and context.Canceled only if it has no method but Error. The walk is
// its own rather than errtree.Walk's, whose visitor costs a call and a
// second type switch per node: it is on every failed attempt's path.
func (m *marks) walk(err error) {
	for err != nil {
		switch e := err.(type) {
		case *judged:
			m.judged(&e.v)
			if e.bare {
				return
			}
			err = e.err
			continue
		case *judgedDelay:
			m.judged(&e.v)
			if m.serverDelay == nil {
				m.serverDelay = e
			}
			if e.bare {
				return
			}
			err = e.err
			continue
		case *sentinel:
			switch e {
			case ErrRejected:
				m.flags |= rejectedMark
			case ErrPermanent:
				m.flags |= permanentMark
			case ErrFinal:
				m.flags |= finalMark
			}
			return // a leaf
		case *Error:
			// Unwrap without the slice it allocates: the same nodes in
			// the same order, nil ones left out.
			m.walk(e.Reason)
			m.walk(e.Last)
			m.walk(e.Cause)
			return
		case isser, delayer, timeouter:
			m.inspectNode(err)
		case interface{ Unwrap() error }:
			err = e.Unwrap()
			continue
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				m.walk(x)
			}
			return
		default:
			// The comparison never panics on a non-comparable error
			// type: context.Canceled's dynamic type is a pointer.
			m.set(canceledMark, err == context.Canceled)
			return
		}
		// Below a node with an Is, RetryAfter or Timeout method.
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				m.walk(x)
			}
			return
		default:
			return
		}
	}
}

// isBare reports whether err, a node Judge wraps, is a leaf walk would
// record nothing of: not one of the package's own errors, with no Unwrap,
// Is, RetryAfter or Timeout method, and not context.Canceled.
func isBare(err error) bool {
	switch err.(type) {
	case *judged, *judgedDelay, *sentinel, *Error,
		interface{ Unwrap() error }, interface{ Unwrap() []error },
		isser, delayer, timeouter:
		return false
	}
	return err != context.Canceled
}

// judged records a verdict.
func (m *marks) judged(v *Verdict) {
	switch v.Class {
	case failure.Permanent:
		m.flags |= permanentMark
	case failure.Throttled:
		m.flags |= throttledMark
	case failure.Timeout:
		m.flags |= timedOutMark
	}
	m.set(finalMark, v.Final)
}

// inspectNode records the marks of one node of an error tree with an Is,
// RetryAfter or Timeout method, not looking below it: errors.Is's test of
// the node's Is method for ErrRejected, ErrPermanent, ErrFinal and
// context.Canceled, and the node as the tree's first ServerDelay or first
// error with a Timeout method if there was none before it. Such a node
// never equals one of those sentinels (theirs have none of the three
// methods), so visit's own cases are the only ones to compare with them.
func (m *marks) inspectNode(err error) {
	if is, ok := err.(isser); ok {
		m.set(rejectedMark, !m.has(rejectedMark) && is.Is(ErrRejected))
		m.set(permanentMark, !m.has(permanentMark) && is.Is(ErrPermanent))
		m.set(finalMark, !m.has(finalMark) && is.Is(ErrFinal))
		m.set(canceledMark, !m.has(canceledMark) && is.Is(context.Canceled))
	}
	if m.serverDelay == nil {
		if sd, ok := err.(serverDelay); ok {
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
func (m *marks) class(classify func(error) failure.Class, err error) failure.Class {
	if classify != nil {
		return classify(err)
	}
	if m.flags&(permanentMark|throttledMark|timedOutMark|canceledMark) == 0 && m.serverDelay == nil && m.timeout == nil {
		return failure.Transient // a plain error: nothing below says more
	}
	switch {
	case m.has(permanentMark):
		return failure.Permanent
	case m.serverDelay != nil && m.serverDelay.RetryAfter() < 0:
		return failure.Permanent
	case m.has(throttledMark):
		return failure.Throttled
	case m.has(timedOutMark) || m.timeout != nil && m.timeout.Timeout():
		return failure.Timeout
	case m.has(canceledMark):
		return failure.Permanent
	}
	return failure.Transient
}
