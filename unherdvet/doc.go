// Package unherdvet finds the retry code that causes retry storms: the
// hand-written loop that sleeps a constant second between attempts,
// never gives up and ignores its context, and the unherd configuration
// that turns its protections off.
//
// Run it from the unherd command, or as a vet tool:
//
//	unherd vet ./...
//	go install github.com/unherd/unherd/unherdvet/cmd/unherd-vet
//	go vet -vettool=$(which unherd-vet) ./...
//
// Each finding names its check and says what to use instead:
//
//	client.go:41: nojitter: retry loop waits a constant 1s between attempts: ...
//
// # Loading, and what runs on the code
//
// Run (and Check, and unherd vet) loads each path in the module whose
// go.mod governs it, from any directory. It asks go list only for the
// package graph (no -export, no -compiled, CGO_ENABLED=0), so that no
// compiler, cgo or C preprocessor runs on the code, and parses and
// type-checks the packages and their dependencies in this process. A
// package that does not load, does not type-check, or has a file whose
// blocks nest deeper than MaxNesting is a Failure, and the others are
// still checked. Cancelling the context stops go list and the loading.
//
// unherd vet exits 0 when every package was checked and nothing was
// found, 1 when something was found (packages it could not check are
// listed on standard error), 2 when nothing was found but a package could
// not be checked or the run timed out: never 0 after a failure.
//
// # Checks
//
//   - nojitter: a retry loop that waits a constant or non-random delay
//     (package nojitter); silent when the attempt is local (a file, a
//     lock, a listening port) or the delay follows the server.
//   - nodelay: a retry loop against another service that tries again
//     at once, with no wait between attempts (package nodelay).
//   - unbounded: a retry loop with no attempt limit and no deadline
//     (package unbounded).
//   - sleepctx: time.Sleep in a retry loop where a context is in scope
//     (package sleepctx).
//   - notimeout: an HTTP call with no timeout at all (package notimeout).
//   - idempotency: a retried POST or PATCH without an Idempotency-Key
//     (package idempotency).
//   - handlerretry: a retry loop in an HTTP handler around a call to
//     another service (package handlerretry).
//   - misuse: an unherd schedule without jitter, a budget turned off, a
//     Policy built per call (package misuse).
//
// A retry loop is a for statement whose body calls something that returns
// an error, branches on that error, leaves the loop when it is nil and
// goes round again when it is not; or an endless for loop that waits and
// goes round on an error and carries on after a success (a reconnect or
// long-poll loop); or a goto back to a label before the call, or a
// function that calls itself again on failure; or a supervisor loop that
// always waits after its attempt and resets a backoff after a good run;
// or an endless loop that only calls a function of the package which
// makes the attempt and returns when it fails (for { pull() }); or a
// retry queue, where the items whose attempt failed are kept in a list
// the next round works on, or sent back to a channel the loop receives
// from (directly, from a goroutine or a timer callback); or a loop that
// makes a pass over a list of addresses each round and waits between
// rounds, or that picks the next address each round with no counter to
// stop it; or a supervisor that doubles its own delay; or an endless loop
// whose if/else on the error goes round on both sides while the failure
// side waits. A goto to the label at the top of a loop's body goes round
// it, like continue, and so does a goto forward to labelled statements
// that end the round; a goto back may test the kind of error
// (errors.Is(err, ErrBusy)). A timer type of another package
// (lazytime.Timer) waits like time.Timer, a closure the failure path calls
// waits when its body does, and a delay function made by a factory of the
// package (NewConstantBackoff(d)) is followed into the literal it returns.
// The attempt may sit in a conditional that only guards it (if err == nil
// { resp, err = c.Do(req) }, as the notimeout fix writes it), and the
// success test may ask for a good answer too (err == nil &&
// resp.StatusCode < 500). Polling loops (which return on error),
// pagination, failover over a list of addresses, iterator loops, a
// consumer taking the next item from a channel and a server's accept
// loop are not retry loops; nor, for nojitter, is periodic work (a
// keepalive or poll that waits at the top of every round and whose
// failure path leaves the delay alone). The checks prefer missing a finding to
// reporting a wrong one: a delay computed by a function they do not
// follow, a client or request built elsewhere, are given the benefit of
// the doubt.
//
// Test files, generated files and test-support packages (an import path
// with an element e2e, tests, testutil(s) or testhelper(s)) are not
// checked.
//
// # Silencing a finding
//
// A comment at the end of the finding's line, or on the line above it,
// silences the checks it names (comma-separated), and should say why:
//
//	//unherdvet:ignore unbounded,nojitter the supervisor restarts us; reconnect forever
//	for {
package unherdvet
