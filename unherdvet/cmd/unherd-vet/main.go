// Command unherd-vet runs unherd's retry checks as a standalone analysis
// driver or as a go vet tool:
//
//	unherd-vet ./...
//	go vet -vettool=$(which unherd-vet) ./...
//
// The checks are those of package github.com/unherd/unherd/unherdvet;
// "unherd-vet help" lists them, and "unherd vet" runs the same checks with
// plain or JSON output.
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/unherd/unherd/unherdvet"
)

func main() { multichecker.Main(unherdvet.Analyzers()...) }
