package a

import (
	"errors"
	"math/rand/v2"
	"time"
)

var errNotReady = errors.New("not ready")

type replica struct{}

func (r *replica) attach(name string) error { return nil }

// pause returns a jittered wait that doubles with step, capped.
func pause(step int) time.Duration {
	d := time.Duration(1<<min(step, 4)) * time.Second
	return d/2 + rand.N(d)
}

// Positive: the argument that changes on each call only sets the wait;
// nothing compares it with a limit, so the function calls itself for as
// long as the error lasts.
func reattach(step int, r *replica, name string) error {
	d := pause(step)
	time.Sleep(d)
	if err := r.attach(name); err != nil {
		if errors.Is(err, errNotReady) {
			return reattach(step+1, r, name) // want `unbounded: retry loop has no attempt limit and no deadline`
		}
		return err
	}
	return nil
}

// Negative: the same argument is compared with a limit too.
func reattachCapped(step int, r *replica, name string) error {
	d := pause(step)
	time.Sleep(d)
	if err := r.attach(name); err != nil {
		if errors.Is(err, errNotReady) && step < 5 {
			return reattachCapped(step+1, r, name)
		}
		return err
	}
	return nil
}

// Negative: the argument counts down the tries left; the wait reads it
// and so does the test that stops.
func reattachLeft(left int, r *replica, name string) error {
	time.Sleep(pause(5 - left))
	if err := r.attach(name); err != nil {
		if left <= 0 {
			return err
		}
		return reattachLeft(left-1, r, name)
	}
	return nil
}

// Negative: the argument goes to a helper that may stop the recursion.
func reattachChecked(step int, r *replica, name string) error {
	time.Sleep(pause(step))
	if err := r.attach(name); err != nil {
		if giveUp(step) {
			return err
		}
		return reattachChecked(step+1, r, name)
	}
	return nil
}

func giveUp(step int) bool { return step > 3 }
