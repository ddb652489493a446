// Package example retries with a fixed delay, for the package's Example.
package example

import "time"

func call() error { return nil }

// Call retries call three times, a second apart.
func Call() error {
	var err error
	for i := 0; i < 3; i++ {
		if err = call(); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return err
}
