//go:build !linux

package unherdpg

import (
	"syscall"
	"time"
)

// userTimeout returns nil: TCP_USER_TIMEOUT is Linux's.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
