package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

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
	if errors.As(err, &pe) {
		return "--" + pe.Flag + ": " + pe.Msg
	}
	return err.Error()
}

// fieldValue is a scenario's parameter as a flag.Value.
func fieldValue(f sim.Field) flag.Value {
	switch v := f.Value.(type) {
	case *int:
		return (*intValue)(v)
	case *float64:
		return (*floatValue)(v)
	case *time.Duration:
		return (*durationValue)(v)
	case *[]int:
		return &intsValue{name: f.Name, v: v}
	}
	panic(fmt.Sprintf("unherd: scenario parameter %q holds a %T", f.Name, f.Value))
}

// The flag package's values for these types are not exported; these
// read and write them the same way.
type (
	intValue      int
	floatValue    float64
	durationValue time.Duration
)

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("parse error")
	}
	*v = intValue(n)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *floatValue) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("parse error")
	}
	*v = floatValue(n)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	*v = durationValue(d)
	return nil
}

// intsValue is a list parameter: sim.ParseInts's form.
type intsValue struct {
	name string
	v    *[]int
}

func (l *intsValue) String() string {
	if l == nil || l.v == nil {
		return ""
	}
	return sim.FormatInts(*l.v)
}

func (l *intsValue) Set(s string) error {
	v, err := sim.ParseInts(l.name, s)
	if err != nil {
		return err
	}
	*l.v = v
	return nil
}
