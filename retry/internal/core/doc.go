// Package core is the retry engine: the per-call state machine, the
// attempt's context and timeout, the classification of errors and the
// wait. Package retry (what a user imports to retry a call) and package
// retry/engine (what an integration imports to drive a call step by
// step) are its two public faces; each documents what it exports, and
// this package's names are theirs.
package core
