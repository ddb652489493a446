package a

import (
	"log"

	"txnlib"
)

// Positive: a transactional producer's commit retried at once; the call
// takes no context, but the client's package talks to the network itself.
func commitLoop(p *txnlib.Producer) {
	for { // want `nodelay: retry loop tries again at once`
		if err := p.CommitTxn(); err != nil {
			log.Printf("commit: %v", err)
			continue
		}
		return
	}
}

// Negative: a read loop that skips a bad message: reading takes what
// comes, it sends no request.
func readLoop(r *txnlib.Reader, out chan<- []byte) {
	for {
		msg, err := r.ReadMessage()
		if err != nil {
			log.Printf("read: %v", err)
			continue
		}
		out <- msg
	}
}
