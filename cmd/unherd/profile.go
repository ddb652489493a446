package main

import (
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile written to path and returns the func
// that stops it and closes the file.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
