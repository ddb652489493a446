package throttle

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// outageRun is what a throttle did through an outage: calls at a steady
// rate, all accepted for two minutes, all refused for down, then accepted
// again for five minutes.
type outageRun struct {
	leak     float64       // share of the outage's calls admitted
	react    time.Duration // outage start to the first second admitting under half
	recovery time.Duration // outage end to the first second admitting 90%
}

// runOutage drives a at rate calls per second, at explicit instants.
func runOutage(t *testing.T, a *Adaptive, rate int, down time.Duration) outageRun {
	const before, after = 2 * time.Minute, 5 * time.Minute
	step := time.Second / time.Duration(rate)
	var r outageRun
	r.react, r.recovery = -1, -1
	var sent, admitted, outageSent, outageAdmitted int
	for at := time.Duration(0); at < before+down+after; at += step {
		now := t0.Add(at)
		failing := at >= before && at < before+down
		tk, err := a.AdmitAt(now)
		sent++
		if err == nil {
			admitted++
			o := success
			if failing {
				o = throttled
			}
			a.DoneAt(now, tk, o)
		} else if !errors.Is(err, ErrThrottled) {
			t.Fatal(err)
		}
		if failing {
			outageSent++
			if err == nil {
				outageAdmitted++
			}
		}
		if sent == rate { // a second has passed
			share := float64(admitted) / float64(sent)
			second := at + step
			if failing && r.react < 0 && share < 0.5 {
				r.react = second - before
			}
			if !failing && at >= before+down && r.recovery < 0 && share >= 0.9 {
				r.recovery = second - before - down
			}
			sent, admitted = 0, 0
		}
	}
	r.leak = float64(outageAdmitted) / float64(outageSent)
	return r
}

func (r outageRun) String() string {
	never := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return d.String()
	}
	return fmt.Sprintf("admitted %.1f%% of the outage's calls, shed half after %s, admitted 90%% again after %s (of 5m)", 100*r.leak, never(r.react), never(r.recovery))
}

// TestOutageShedAndRecover runs a 100 calls/s client through a
// three-minute outage with the defaults and with the SRE book's settings
// (a two-minute window, local rejections counted as requests). The
// defaults shed half the calls within the 10 s window and admit 90% again
// within seconds of the end; the book's let the first minute of failures
// through and take minutes to recover.
func TestOutageShedAndRecover(t *testing.T) {
	book := AdaptiveSettings{Window: 2 * time.Minute, WindowBuckets: 24, CountRejections: true}
	def := runOutage(t, newAdaptive(t, AdaptiveSettings{}), 100, 3*time.Minute)
	old := runOutage(t, newAdaptive(t, book), 100, 3*time.Minute)
	t.Logf("defaults: %v", def)
	t.Logf("SRE book: %v", old)
	if def.react < 0 || def.react > DefaultWindow {
		t.Errorf("defaults shed half after %v, want within %v", def.react, DefaultWindow)
	}
	if def.leak > 0.1 {
		t.Errorf("defaults admitted %.1f%% of the outage's calls, want at most 10%%", 100*def.leak)
	}
	if def.recovery < 0 || def.recovery > 5*time.Second {
		t.Errorf("defaults admitted 90%% again %v after the outage, want within 5s", def.recovery)
	}
	if old.recovery >= 0 && old.recovery < time.Minute {
		t.Errorf("the book's settings recovered in %v: the comparison no longer shows why the defaults differ", old.recovery)
	}
}
