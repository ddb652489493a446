// Package chart draws a simulation result's chart data as line charts,
// PNG or SVG, with gonum.org/v1/plot.
//
// Each sim.Series becomes a line with its own colour and dash pattern (so
// the chart reads in grey too) and an entry in the legend; series of up
// to MarkPoints points also mark each point, so a sweep of a few sizes
// shows where the measurements are. Points whose X or Y is NaN or
// infinite are left out; a chart with no finite point is an error. Fonts
// come embedded with gonum/plot (Liberation), so drawing needs nothing
// installed on the machine.
package chart
