// Package txnlib stands for a client library that talks to its service
// itself (it imports net).
package txnlib

import "net"

type Producer struct{ conn net.Conn }

func (p *Producer) CommitTxn() error {
	_, err := p.conn.Write([]byte("commit"))
	return err
}

type Reader struct{ conn net.Conn }

func (r *Reader) ReadMessage() ([]byte, error) {
	b := make([]byte, 512)
	n, err := r.conn.Read(b)
	return b[:n], err
}

// Handler is implemented by the library's users.
type Handler interface {
	HandleMessage(m []byte) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(m []byte) error

func (h HandlerFunc) HandleMessage(m []byte) error { return h(m) }
