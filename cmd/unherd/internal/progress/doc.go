// Package progress shows a running scenario's progress as a bar on a
// terminal, drawn by github.com/schollz/progressbar.
//
// A [Bar] stays silent for its first second (DefaultDelay): work that
// finishes sooner shows nothing, so quick commands do not flicker. After
// that it draws on its writer and clears itself when finished, so the
// tables printed afterwards start on a clean line. The command creates a
// Bar only when standard error is a terminal ([IsTerminal]); in tests, CI
// logs and pipes nothing of it appears. Feed it from sim.Options.Progress
// through [Bar.Update].
package progress
