package a

import (
	"context"
	"extlib"
	"time"
)

func serveTunnel(conn int) {}

// Positive: a tunnel's reconnect loop backs off with a library's struct
// whose Jitter is left off, and waits through the library's own timer.
func reconnectLib(ctx context.Context) {
	b := &extlib.Backoff{Max: 5 * time.Minute}
	for {
		conn, err := dial("tunnel")
		if err != nil {
			d := b.Duration()
			select {
			case <-extlib.AfterSignal(d): // want `nojitter: retry loop's delay grows without jitter`
				continue
			case <-ctx.Done():
				return
			}
		}
		serveTunnel(conn)
	}
}

// Negative: the same with Jitter on.
func reconnectLibJitter(ctx context.Context) {
	b := &extlib.Backoff{Max: 5 * time.Minute, Jitter: true}
	for {
		conn, err := dial("tunnel")
		if err != nil {
			select {
			case <-extlib.AfterSignal(b.Duration()):
				continue
			case <-ctx.Done():
				return
			}
		}
		serveTunnel(conn)
	}
}

type deviceRequest struct{ PollInterval time.Duration }

func exchangeDevice(ctx context.Context, req deviceRequest) (string, error) { return "", nil }

// Negative: a device-code flow polls at the interval the server gave.
func pollDevice(ctx context.Context, req deviceRequest) (string, error) {
	for {
		tok, err := exchangeDevice(ctx, req)
		if err == nil {
			return tok, nil
		}
		select {
		case <-time.After(req.PollInterval):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}
