package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/unherd/unherd/cmd/unherd/internal/web"
)

func init() {
	addCommand(command{"serve", serveSynopsis,
		"serve the what-if page: the simulator compiled to WebAssembly runs in the browser; the first line printed is the page's URL; --export DIR writes the page as static files instead",
		(*env).serve})
}

// serveSynopsis is serve's usage line after "unherd ".
const serveSynopsis = "serve [--addr HOST:PORT] [--export DIR]"

// defaultServeAddr is where serve listens unless --addr says otherwise:
// loopback only, since the page is for the person at the machine.
const defaultServeAddr = "127.0.0.1:8080"

// serve serves the page (package web) until ctx is done, or writes it into
// a directory with --export.
func (e *env) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", defaultServeAddr, "`address` to listen on, host:port (port 0 picks a free one)")
	export := fs.String("export", "", "write the page as static files into `DIR` (created if needed) and exit, instead of serving it")
	if err := e.parse(fs, args, "unherd "+serveSynopsis); err != nil {
		return err
	}
	if *export != "" {
		if err := web.Export(*export); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		fmt.Fprintf(e.stdout, "wrote the page into %s: serve it from any static host (.wasm as application/wasm)\n", *export)
		return nil
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w (choose another with --addr)", err)
	}
	fmt.Fprintln(e.stdout, pageURL(ln.Addr()))
	srv := &http.Server{Handler: web.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return ctx.Err()
}

// pageURL is the page's address for a listener on a: an unspecified host
// (0.0.0.0, ::) is shown as the loopback address, which a browser on the
// machine can open.
func pageURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/"
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if tcp.IP != nil && tcp.IP.To4() == nil {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)) + "/"
}
