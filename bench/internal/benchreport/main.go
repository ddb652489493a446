// Command benchreport reads the output of go test -bench for the side by
// side benchmarks and prints a one-line reading of one scenario, computed
// from the medians of the runs: how unherd compares with the fastest peer
// library and whether the scenario's target is met. run.sh calls it once
// per scenario while writing BENCHMARKS.md.
//
// Usage:
//
//	benchreport -scenario FirstSuccess raw.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	scenario := flag.String("scenario", "", "benchmark name without the Benchmark prefix, e.g. FirstSuccess")
	flag.Parse()
	if *scenario == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchreport -scenario NAME raw.txt")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	defer f.Close()
	if err := run(os.Stdout, f, *scenario); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, r io.Reader, scenario string) error {
	results, err := parse(r)
	if err != nil {
		return err
	}
	line, err := reading(medians(results, scenario), scenario)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, line)
	return err
}
