// Package progress shows a running scenario's progress on standard error:
// as a bar on a terminal, with the time left, and as
// plain lines elsewhere (a pipe, a log, CI).
//
// A [Bar] stays silent for its first second (DefaultDelay): work that
// finishes sooner shows nothing, so quick commands do not flicker. After
// that it draws on its writer and clears itself when finished, so the
// tables printed afterwards start on a clean line. [Lines] keeps the same
// first second of silence, then writes one line with the scenario and the
// percent done at most every three seconds (DefaultInterval), so a long
// run in a pipe is not silent and a log is not flooded. The command picks
// a Bar when standard error is a terminal ([IsTerminal]) and Lines
// otherwise; --quiet picks neither. Feed either from sim.Options.Progress
// through its Update method.
package progress
