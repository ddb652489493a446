// Package chart draws a simulation result's chart data as line charts,
// PNG or SVG, with gonum.org/v1/plot.
//
// Each sim.Series becomes a line in a colour of the Okabe-Ito palette,
// which stays distinct for colour-blind readers, with its own dash
// pattern (so the chart reads in grey, and lines on top of each other
// are told apart) and an entry in the legend, which sits in rows below
// the plot, off the data. Series of up to MarkPoints points also mark
// each point, so a sweep of a few sizes shows where the measurements
// are. A chart's axes follow its scales: linear (with zero in view,
// ticks at 1, 2 or 5 times a power of ten, or at the data's X values
// when there are few, or at multiples of the chart's XStep),
// logarithmic in whole decades for values spanning orders of magnitude
// (a zero is drawn on the bottom edge, and the legend says so: no tick
// reads 0), or nines for percentiles (p50, p90, p99, p99.9, p99.99
// evenly apart). Tick labels separate thousands: 11,708. Its spans, such
// as the time a dependency was down, are shaded behind the data and
// named inside, at their top left; its reference lines, such as a
// capacity or a rate limit, are drawn across it in thin grey and named
// on the line, at its right end. A series merged over seeds (with Lo and
// Hi) has its range over the seeds shaded around its line, the median,
// in a faint tint of its colour, and the legend says so. A chart's notes
// circle a point of the data and say what explains it, beside it. Points whose X or Y is NaN or
// infinite are left out; a chart with no finite point is an error. Fonts
// come embedded with gonum/plot (Liberation), so drawing needs nothing
// installed on the machine.
package chart
