// Package golden is the golden-file plumbing the project's tests share:
// one -update flag, and Want, which reads the expected bytes of a file
// under testdata or, with -update, first rewrites it from the output the
// test just produced.
//
// Tests compare what Want returns with their output themselves (with
// go-cmp's Diff, say), so that this package imports the standard library
// only. Run `go test ./pkg -update` after an intended change of output,
// and review the rewritten files before committing them.
package golden
