package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/unherd/unherd/unherdvet"
)

func init() {
	addCommand(command{
		name:     "vet",
		synopsis: "vet [--json] [PACKAGES]",
		summary:  "find the retry code that causes storms (constant delays, no bound, sleeps that ignore ctx, calls without timeout, retried POSTs without Idempotency-Key, retries in handlers, unherd turned off) in the Go packages named as go build takes them (default .); exit 1 when something is found; silence a line with //unherdvet:ignore CHECK",
		run:      (*env).vet,
	})
}

// vetDir is the directory vet resolves package patterns in; "" is the
// current directory. Tests point it at their testdata.
var vetDir = ""

// errFound is returned when vet finds something: exit code 1.
var errFound = errors.New("vet: found retry code that causes storms")

func (e *env) vet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the findings as one JSON array (file, line, column, check, message) on standard output")
	fs.SetOutput(io.Discard)
	var patterns []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.stdout, "Usage: unherd vet [--json] [PACKAGES]\n\nChecks:\n")
			for _, a := range unherdvet.Analyzers() {
				fmt.Fprintf(e.stdout, "  %-13s %s\n", a.Name, a.Doc)
			}
			fmt.Fprintf(e.stdout, "\nFlags:\n")
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			return errHelp
		}
		if err != nil {
			return usagef("vet: %v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		// Flags may follow the packages: unherd vet ./... --json.
		patterns = append(patterns, fs.Arg(0))
		args = fs.Args()[1:]
	}
	for _, p := range patterns {
		if strings.HasPrefix(p, "-") {
			return usagef("vet: flag %q after the packages", p)
		}
	}
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	findings, err := unherdvet.Check(vetDir, patterns...)
	if err != nil {
		return err
	}
	if *asJSON {
		err = unherdvet.WriteJSON(e.stdout, findings)
	} else {
		err = unherdvet.WriteText(e.stdout, findings)
	}
	if err != nil {
		return err
	}
	if len(findings) > 0 {
		return fmt.Errorf("%w: %d findings", errFound, len(findings))
	}
	return nil
}
