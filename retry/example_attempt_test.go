package retry_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
)

var errBusy, errBad = errors.New("server busy"), errors.New("bad request")

// A protocol of one's own (here one line over TCP) is retried by
// ranging over the policy's attempts: each is a context bounded by the
// attempt timeout, and the error the body leaves in err says how it
// ended. The protocol's client judges an answer with retry.Judge: "busy
// 5" is a throttling answer that asks for 5 ms, "bad" a permanent one.
func ExamplePolicy_Attempts() {
	addr, stop := lineServer("busy 5", "pong") // answers "busy 5" once, then "pong"
	defer stop()
	p, err := retry.New(retry.Config{MaxAttempts: 3, AttemptTimeout: time.Second,
		Backoff: backoff.Schedule{Base: time.Millisecond}})
	if err != nil {
		panic(err)
	}
	var reply string
	attempts := 0
	for ctx := range p.Attempts(context.Background(), &err) {
		attempts++
		reply, err = ask(ctx, addr, "ping")
	}
	fmt.Println(reply, err, attempts)
	// Output: pong <nil> 2
}

// ask sends one request line over a new connection and reads the answer,
// within ctx's deadline, judging a refusal with its class and the delay
// it asks for.
func ask(ctx context.Context, addr, req string) (string, error) {
	conn, err := new(net.Dialer).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := fmt.Fprintln(conn, req); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	switch f := strings.Fields(line); {
	case len(f) == 2 && f[0] == "busy":
		ms, err := strconv.Atoi(f[1])
		v := retry.Verdict{Class: failure.Throttled, Delay: time.Duration(ms) * time.Millisecond, HasDelay: err == nil}
		return "", retry.Judge(errBusy, v)
	case len(f) == 1 && f[0] == "bad":
		return "", retry.Judge(errBad, retry.Verdict{Class: failure.Permanent})
	}
	return strings.TrimSpace(line), nil
}

// lineServer serves on loopback, answering each connection's request
// line with the next of answers, the last one once the others are used.
// stop closes it and waits for it to end.
func lineServer(answers ...string) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(conn).ReadString('\n')
			_, _ = fmt.Fprintln(conn, answers[min(i, len(answers)-1)])
			_ = conn.Close()
		}
	}()
	return ln.Addr().String(), func() { _ = ln.Close(); <-done }
}
