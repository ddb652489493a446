// Package table renders a simulation result's rows and claims: as aligned
// text for a terminal, as Markdown for the report, and as CSV for
// spreadsheets and scripts.
//
// Text and Markdown round numbers for reading (four significant figures,
// never an exponent for ordinary magnitudes); CSV keeps every digit
// (strconv's shortest representation that reads back exactly). Columns
// come from Result.Columns; when a scenario leaves it empty, the union of
// the rows' keys in sorted order is used. A row without a column's key
// shows an empty cell. Claims print their verdict (holds or DIFFERS) with
// the seeds they were judged on and those that differ.
package table
