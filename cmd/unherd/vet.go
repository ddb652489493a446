package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unherd/unherd/unherdvet"
)

func init() {
	addCommand(command{
		name:     "vet",
		synopsis: vetSynopsis,
		summary:  "find the retry code that causes storms (constant delays, no delay at all, no bound, sleeps that ignore ctx, calls without timeout, retried POSTs without Idempotency-Key, retries in handlers, unherd turned off) in the Go packages named as go build takes them (default .), each path in its own module; exit 1 when something is found, 2 when a package could not be checked; silence a line with //unherdvet:ignore CHECK; --fix applies the mechanical rewrites",
		run:      (*env).vet,
	})
}

// vetSynopsis is the vet command's usage line after "unherd ".
const vetSynopsis = "vet [--json] [--fix] [--timeout D] [PACKAGES]"

// vetDir is the directory vet resolves package patterns in; "" is the
// current directory. Tests point it at their testdata.
var vetDir = ""

// defaultVetTimeout bounds a whole vet run unless --timeout says
// otherwise.
const defaultVetTimeout = 5 * time.Minute

// errFound is returned when vet finds something: exit code 1.
var errFound = errors.New("vet: found retry code that causes storms")

// errNotChecked is returned when vet found nothing but could not check
// everything: exit code 2.
var errNotChecked = errors.New("vet: could not check every package")

// vetHelp follows the list of checks in vet -h.
const vetHelp = `
Each path (., ./dir, ./dir/..., /abs/dir, file.go) loads in the module
whose go.mod governs it, from whatever directory vet runs in; import
paths load in the current directory's module.

What vet runs on the code: go list, to find the packages and their
imports, with CGO_ENABLED=0 and without -export, so that no compiler,
no cgo and no C preprocessor runs; go list may download the modules
that go.mod requires, as go build would. The packages and their
dependencies are then parsed and type-checked inside vet. A file whose
blocks nest more than %d deep is not checked. The whole run stops at
--timeout; Ctrl-C (SIGINT) or SIGTERM stops it and go list at once.

With --fix, vet rewrites the files where a fix is mechanical, formats
them, and counts only the findings it did not fix for the exit code.

Exit codes: 0 every package checked, nothing found; 1 something found
(even if some packages could not be checked: they are listed on standard
error); 2 nothing found but a package could not be checked (it does not
load or type-check, it nests too deeply, or the run timed out), or a
usage error; 130 interrupted. vet never exits 0 when a package was not
checked.
`

func (e *env) vet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the findings as one JSON array (file, line, column, check, message) on standard output")
	applyFixes := fs.Bool("fix", false, "apply the suggested fixes (a sleep to a select on the context, a constant delay to a jittered one, http.Get to a request with the context on a client with a timeout) to the files, and format them")
	timeout := fs.Duration("timeout", defaultVetTimeout, "stop and exit 2 when loading and checking take longer than this (0 means no limit)")
	fs.SetOutput(io.Discard)
	var patterns []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.stdout, "Usage: unherd %s\n\nChecks:\n", vetSynopsis)
			for _, a := range unherdvet.Analyzers() {
				fmt.Fprintf(e.stdout, "  %-13s %s\n", a.Name, a.Doc)
			}
			fmt.Fprintf(e.stdout, vetHelp, unherdvet.MaxNesting)
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
	if *timeout < 0 {
		return usagef("vet: --timeout %v is negative", *timeout)
	}
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	res, err := unherdvet.Run(runCtx, vetDir, patterns...)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return &exitError{code: exitNotChecked, err: fmt.Errorf("%w: timed out after %v; nothing was checked (raise --timeout, or vet fewer packages at a time)", errNotChecked, *timeout)}
		}
		return err
	}
	for _, f := range res.Failures {
		fmt.Fprintf(e.stderr, "unherd: vet: could not check %v\n", f)
	}
	if *asJSON {
		err = unherdvet.WriteJSON(e.stdout, res.Findings)
	} else {
		err = unherdvet.WriteText(e.stdout, res.Findings)
	}
	if err != nil {
		return err
	}
	left := len(res.Findings)
	if *applyFixes {
		applied, files, ferr := unherdvet.ApplyFixes(res.Findings)
		left -= len(applied)
		fmt.Fprintf(e.stderr, "unherd: vet: fixed %d of %d findings in %d files\n", len(applied), len(res.Findings), len(files))
		if ferr != nil {
			return &exitError{code: exitNotChecked, err: fmt.Errorf("vet: could not apply every fix: %w", ferr)}
		}
	}
	switch {
	case left > 0 && len(res.Failures) > 0:
		return fmt.Errorf("%w: %d findings; %d packages could not be checked", errFound, left, len(res.Failures))
	case left > 0:
		return fmt.Errorf("%w: %d findings", errFound, left)
	case len(res.Failures) > 0:
		return &exitError{code: exitNotChecked, err: fmt.Errorf("%w: %d could not be checked (listed above); nothing found in the others", errNotChecked, len(res.Failures))}
	}
	return nil
}
