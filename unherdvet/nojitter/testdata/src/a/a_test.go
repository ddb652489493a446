package a

import "time"

// Test files are not checked.
func waitForServer() {
	for i := 0; i < 3; i++ {
		if err := call(); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
}
