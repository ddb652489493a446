package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/unherd/unherd/sim"
)

// defaultSeed is the seed every command uses unless --seed says otherwise.
const defaultSeed = 1

// runFlags are the flags that control how scenarios run, shared by every
// command.
type runFlags struct {
	seed    seedFlag
	workers int
	quiet   bool
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.seed = defaultSeed
	fs.Var(&r.seed, "seed", "random `seed`, a whole number from 0 to 18446744073709551615; the same seed gives the same results")
	fs.IntVar(&r.workers, "workers", 0, "goroutines running independent runs (0: one per core); results do not depend on it")
	fs.BoolVar(&r.quiet, "quiet", false, "write no progress on standard error")
}

func (r *runFlags) options() sim.Options {
	return sim.Options{Seed: uint64(r.seed), Workers: r.workers}
}

// seedFlag is --seed: a uint64 whose parse error says what is valid.
type seedFlag uint64

func (s *seedFlag) String() string { return strconv.FormatUint(uint64(*s), 10) }

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a seed: want a whole number from 0 to %d", v, uint64(math.MaxUint64))
	}
	*s = seedFlag(n)
	return nil
}

// parse parses args into fs. Help goes to stdout; mistakes become usage
// errors that name the flag.
func (e *env) parse(fs *flag.FlagSet, args []string, synopsis string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(e.stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	if f := fs.Lookup("workers"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if n, ok := g.Get().(int); ok && n < 0 {
				return usagef("%s: -workers %d is negative", fs.Name(), n)
			}
		}
	}
	return nil
}

// paramMessage is a parameter error without the sim package's prefix,
// which the command line's own prefix replaces: "--clients: 0 must be
// above zero".
func paramMessage(err error) string {
	var pe *sim.ParamError
	if errors.As(err, &pe) && pe.Policy == "" {
		return "--" + pe.Field + ": " + pe.Msg
	}
	return err.Error()
}
