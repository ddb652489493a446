package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/unherd/unherd/failure"
)

// Error types for random error trees: each has a different method set, so
// that inspect meets every shape errors.Is and errors.As handle.
type (
	// isLeaf's Is method reports target.
	isLeaf struct{ target error }
	// timeoutLeaf's Timeout method reports timeout.
	timeoutLeaf struct{ timeout bool }
	// delayLeaf is a ServerDelay of its own.
	delayLeaf struct{ d time.Duration }
	// flatLeaf is a value type that cannot be compared: a comparison of
	// two flatLeafs would panic.
	flatLeaf struct{ msg []string }
	// isWrapper wraps err and is also target.
	isWrapper struct {
		err, target error
	}
	// timeoutWrapper wraps err and reports timeout, as *url.Error does.
	timeoutWrapper struct {
		err     error
		timeout bool
	}
	// multiIs wraps errs and is also target.
	multiIs struct {
		errs   []error
		target error
	}
)

func (e *isLeaf) Error() string                { return "is leaf" }
func (e *isLeaf) Is(target error) bool         { return target == e.target }
func (e *timeoutLeaf) Error() string           { return "timeout leaf" }
func (e *timeoutLeaf) Timeout() bool           { return e.timeout }
func (e *delayLeaf) Error() string             { return "delay leaf" }
func (e *delayLeaf) RetryAfter() time.Duration { return e.d }
func (e flatLeaf) Error() string               { return "flat leaf" }
func (e *isWrapper) Error() string             { return "is wrapper" }
func (e *isWrapper) Unwrap() error             { return e.err }
func (e *isWrapper) Is(target error) bool      { return target == e.target }
func (e *timeoutWrapper) Error() string        { return "timeout wrapper" }
func (e *timeoutWrapper) Unwrap() error        { return e.err }
func (e *timeoutWrapper) Timeout() bool        { return e.timeout }
func (e *multiIs) Error() string               { return "multi is" }
func (e *multiIs) Unwrap() []error             { return e.errs }
func (e *multiIs) Is(target error) bool        { return target == e.target }
func (e *multiIs) RetryAfter() time.Duration   { return time.Second }
func (e *delayLeaf) Is(target error) bool      { return false }

// marksTargets are the errors isLeaf, isWrapper and multiIs report being.
var marksTargets = []error{ErrRejected, ErrPermanent, ErrFinal, context.Canceled, ErrAttemptsExhausted, errBoom}

// randomTree returns a random error tree at most depth levels deep.
func randomTree(r *rand.Rand, depth int) error {
	target := func() error { return marksTargets[r.IntN(len(marksTargets))] }
	if depth == 0 || r.IntN(4) == 0 {
		switch r.IntN(13) {
		case 0:
			return errBoom
		case 1:
			return context.Canceled
		case 2:
			return context.DeadlineExceeded
		case 3:
			return ErrRejected
		case 4:
			return ErrPermanent
		case 5:
			return ErrFinal
		case 6:
			return ErrAttemptsExhausted
		case 7:
			return NewRejection("rejected")
		case 8:
			return &isLeaf{target()}
		case 9:
			return &timeoutLeaf{r.IntN(2) == 0}
		case 10:
			return &delayLeaf{time.Duration(r.IntN(3)-1) * time.Second}
		case 11:
			return flatLeaf{[]string{"x"}}
		default:
			return errors.New("fresh")
		}
	}
	sub := func() error { return randomTree(r, depth-1) }
	orNil := func() error {
		if r.IntN(3) == 0 {
			return nil
		}
		return sub()
	}
	switch r.IntN(14) {
	case 0:
		return MarkPermanent(sub())
	case 1:
		return Judge(sub(), Verdict{Final: true})
	case 2:
		return Judge(sub(), Verdict{Class: failure.Throttled})
	case 3:
		return Judge(sub(), Verdict{Class: failure.Throttled, Delay: time.Duration(r.IntN(3)-1) * time.Second, HasDelay: true})
	case 4:
		return fmt.Errorf("wrapped: %w", sub())
	case 5:
		return fmt.Errorf("two: %w, %w", sub(), sub())
	case 6:
		return errors.Join(sub(), sub(), sub())
	case 7:
		return &Error{Reason: orNil(), Attempts: 2, Last: orNil(), Cause: orNil()}
	case 8:
		return &timeoutError{sub()}
	case 9:
		return &isWrapper{sub(), target()}
	case 10:
		return &timeoutWrapper{sub(), r.IntN(2) == 0}
	case 11:
		return &multiIs{[]error{sub(), sub()}, target()}
	case 12:
		return Judge(sub(), Verdict{Class: failure.Class(r.IntN(5)), Final: r.IntN(2) == 0}) // 4: no class at all
	default:
		// A server delay without the throttled mark.
		return Judge(sub(), Verdict{Delay: time.Second, HasDelay: true})
	}
}

// marksOf is what inspect must find in err, by errors.Is and errors.As
// (none of the trees' errors has an As method, which inspect does not
// call and errors.As would).
func marksOf(err error) marks {
	var m marks
	m.set(rejectedMark, errors.Is(err, ErrRejected))
	m.set(permanentMark, errors.Is(err, ErrPermanent))
	m.set(finalMark, errors.Is(err, ErrFinal))
	m.set(canceledMark, errors.Is(err, context.Canceled))
	m.set(throttledMark, anyVerdict(err, func(v Verdict) bool { return v.Class == failure.Throttled }))
	m.set(timedOutMark, anyVerdict(err, func(v Verdict) bool { return v.Class == failure.Timeout }))
	var sd serverDelay
	if errors.As(err, &sd) {
		m.serverDelay = sd
	}
	var to interface{ Timeout() bool }
	if errors.As(err, &to) {
		m.timeout = to
	}
	return m
}

// anyVerdict reports whether a verdict in err's tree satisfies ok,
// walking the tree by its Unwrap methods alone.
func anyVerdict(err error, ok func(Verdict) bool) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *judged:
		if ok(e.v) {
			return true
		}
	case *judgedDelay:
		if ok(e.v) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return anyVerdict(u.Unwrap(), ok)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if anyVerdict(e, ok) {
				return true
			}
		}
	}
	return false
}

// sameMarks reports whether inspect's marks got are want, the same nodes
// for the server delay and the timeout. Neither kind of node is a flatLeaf,
// so the comparisons cannot panic.
func sameMarks(got, want marks) bool {
	return got.flags == want.flags &&
		got.serverDelay == want.serverDelay && got.timeout == want.timeout
}

// TestInspectMatchesErrorsIs checks inspect's one walk against errors.Is
// and errors.As on random error trees of every shape, and on the trees the
// simulator and the loop's own errors make.
func TestInspectMatchesErrorsIs(t *testing.T) {
	fixed := []error{
		errBoom,
		Judge(errBoom, Verdict{Class: failure.Throttled}),
		Judge(errBoom, Verdict{Class: failure.Throttled, Delay: time.Second, HasDelay: true}),
		&timeoutError{context.DeadlineExceeded},
		&Error{Reason: ErrPermanent, Attempts: 1, Last: errBoom},
		&Error{Reason: ErrRejected, Attempts: 1, Cause: NewRejection("open")},
		fmt.Errorf("get: %w", context.Canceled),
		flatLeaf{},
		Judge(errBoom, Verdict{Class: failure.Transient}),
		Judge(context.Canceled, Verdict{Class: failure.Transient}),
		Judge(flatLeaf{}, Verdict{Class: failure.Transient}),
		Judge(&timeoutLeaf{true}, Verdict{Class: failure.Throttled, Delay: time.Second, HasDelay: true}),
	}
	for _, err := range fixed {
		if got, want := inspect(err), marksOf(err); !sameMarks(got, want) {
			t.Errorf("inspect(%v) = %+v, want %+v", err, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		err := randomTree(r, 4)
		if got, want := inspect(err), marksOf(err); !sameMarks(got, want) {
			t.Fatalf("tree %d: inspect(%v) = %+v, want %+v", i, err, got, want)
		}
	}
}

// TestJudgeSkipsBareError checks that a verdict on a plain error marks
// it as bare, so that the walk stops there, and one on an error with
// something to find does not.
func TestJudgeSkipsBareError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		bare bool
	}{
		{Judge(errBoom, Verdict{Class: failure.Transient}), true},
		{Judge(errors.New("busy"), Verdict{Class: failure.Throttled, Delay: time.Second, HasDelay: true}), true},
		{Judge(flatLeaf{}, Verdict{}), true},
		{Judge(context.Canceled, Verdict{}), false},
		{Judge(&timeoutLeaf{true}, Verdict{}), false},
		{Judge(&delayLeaf{time.Second}, Verdict{}), false},
		{Judge(&isLeaf{ErrFinal}, Verdict{}), false},
		{Judge(fmt.Errorf("wrapped: %w", errBoom), Verdict{}), false},
		{Judge(errors.Join(errBoom), Verdict{}), false},
		{Judge(ErrPermanent, Verdict{}), false},
		{Judge(Judge(errBoom, Verdict{Final: true}), Verdict{}), false},
	} {
		var bare bool
		switch e := tc.err.(type) {
		case *judged:
			bare = e.bare
		case *judgedDelay:
			bare = e.bare
		default:
			t.Fatalf("Judge(%v) is a %T", tc.err, tc.err)
		}
		if bare != tc.bare {
			t.Errorf("Judge(%v): bare %v, want %v", tc.err, bare, tc.bare)
		}
	}
}

// FuzzInspect is TestInspectMatchesErrorsIs over trees the fuzzer's seeds
// draw.
func FuzzInspect(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(4))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, depth uint8) {
		err := randomTree(rand.New(rand.NewPCG(s1, s2)), int(depth%6))
		if got, want := inspect(err), marksOf(err); !sameMarks(got, want) {
			t.Fatalf("inspect(%v) = %+v, want %+v", err, got, want)
		}
	})
}

// Every marker of an error returns nil for nil, so that a marked success
// is still a success (and a nil error never turns into a non-nil error
// whose Error method dereferences nil).
func TestMarkersOfNil(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(error) error
	}{
		{"MarkPermanent", MarkPermanent},
		{"Judge, final", func(err error) error { return Judge(err, Verdict{Final: true}) }},
		{"MarkAttemptTimeout", MarkAttemptTimeout},
		{"Judge, throttled with a delay", func(err error) error {
			return Judge(err, Verdict{Class: failure.Throttled, Delay: time.Second, HasDelay: true})
		}},
		{"Judge, a class", func(err error) error { return Judge(err, Verdict{Class: failure.Timeout}) }},
		{"Judge, a delay", func(err error) error { return Judge(err, Verdict{Delay: time.Second, HasDelay: true}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.mark(nil); err != nil {
				t.Errorf("%s(nil) = %T, want nil", tc.name, err)
			}
			if err := tc.mark(errBoom); err == nil || !errors.Is(err, errBoom) {
				t.Errorf("%s(errBoom) = %v, want an error wrapping errBoom", tc.name, err)
			}
		})
	}
}
