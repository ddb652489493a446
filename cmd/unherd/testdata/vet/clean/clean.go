// Package clean polls without retrying: nothing for unherd vet.
package clean

import (
	"context"
	"time"
)

// Wait polls done until it reports true or fails.
func Wait(ctx context.Context, done func(context.Context) (bool, error)) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
