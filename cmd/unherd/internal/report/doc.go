// Package report writes the simulator's results as a directory a reader
// can browse: report.md, one PNG and one SVG per chart, and one CSV per
// scenario table.
//
// report.md gives each scenario its description, whether its clients are
// a closed population or an open stream (the distinction Brooker draws in
// "What is Backoff For?", 2022,
// https://brooker.co.za/blog/2022/08/11/backoff.html: backoff protects a
// dependency from a closed population; only budgets and throttling bound
// an open stream), its parameters, its table, the published claims beside
// what the runs measured, and its charts, embedded as PNG with a link to
// the SVG. Over several seeds (sim.RunSeeds) table cells are medians, each
// claim's figures carry their range over the seeds, and its verdict says
// which seeds it was judged on and which differ. The file depends only on
// the results and the seeds, not on the clock or the machine, so the same
// seeds give the same report.md.
package report
