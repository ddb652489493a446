package a

import (
	"net"
	"time"
)

// Negative: an accept loop on the server's own listener backs off on
// temporary errors, as net/http does; it serves connections, it does
// not retry a dependency.
func acceptLoop(l net.Listener) {
	var tempDelay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				if tempDelay == 0 {
					tempDelay = 5 * time.Millisecond
				} else {
					tempDelay *= 2
				}
				time.Sleep(tempDelay)
				continue
			}
			return
		}
		go serve(c)
	}
}
