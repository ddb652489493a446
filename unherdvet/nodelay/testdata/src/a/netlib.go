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

// Negative: a consumer hands each message it receives to the user's
// handler and goes on with the next one when the handler fails.
func handlerLoop(in <-chan []byte, h txnlib.Handler) {
	for {
		msg, ok := <-in
		if !ok {
			return
		}
		if err := h.HandleMessage(msg); err != nil {
			log.Printf("handler: %v", err)
			continue
		}
	}
}

// Negative: the same handler retried at once on one message: the
// handler is the caller's code, not a request of the library.
func handleAgain(msg []byte, h txnlib.Handler) {
	for {
		if err := h.HandleMessage(msg); err != nil {
			continue
		}
		return
	}
}
