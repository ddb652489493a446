//go:build js && wasm

// Command wasm is the simulator for the page of `unherd serve`, built with
// GOOS=js GOARCH=wasm (go generate in the package above). Each Web Worker
// runs one instance, which defines two functions on the worker's global
// object and then waits for calls:
//
//	unherdScenarios() string
//	    the scenarios and their parameters, as JSON (job.Scenarios)
//	unherdRun(request string, progress function(done, total)) string
//	    runs one request and returns the answer, as JSON (job.Do)
//
// A run blocks the worker that makes it, never the page: the page stops a
// run by terminating its worker.
package main

import (
	"context"
	"runtime/debug"
	"syscall/js"

	"github.com/unherd/unherd/cmd/unherd/internal/web/job"
)

func main() {
	// A run allocates about 100 MiB in all and a worker makes few runs, so
	// the collector waits for a heap of 512 MiB: under WebAssembly it is
	// single-threaded and write barriers are slow, and it took a fifth of
	// the time of a what-if at the default rate.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(512 << 20)
	js.Global().Set("unherdScenarios", js.FuncOf(func(js.Value, []js.Value) any {
		return string(job.Scenarios())
	}))
	js.Global().Set("unherdRun", js.FuncOf(func(_ js.Value, args []js.Value) any {
		var progress func(done, total int)
		if len(args) > 1 && args[1].Type() == js.TypeFunction {
			cb := args[1]
			progress = func(done, total int) { cb.Invoke(done, total) }
		}
		req := ""
		if len(args) > 0 {
			req = args[0].String()
		}
		return string(job.Do(context.Background(), []byte(req), progress))
	}))
	select {}
}
