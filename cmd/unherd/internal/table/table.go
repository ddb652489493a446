package table

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unherd/unherd/sim"
)

// Columns returns the columns to show for r: r.Columns, or the sorted
// union of the rows' keys.
func Columns(r *sim.Result) []string {
	if len(r.Columns) > 0 {
		return r.Columns
	}
	seen := map[string]bool{}
	var cols []string
	for _, row := range r.Rows {
		for k := range row {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	sort.Strings(cols)
	return cols
}

// Cell formats one value for reading.
func Cell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return Float(v)
	case float32:
		return Float(float64(v))
	case time.Duration:
		return v.String()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}

// Float formats f with four significant figures, in fixed notation for
// magnitudes from 0.0001 to 10^15.
func Float(f float64) string {
	a := math.Abs(f)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return strconv.FormatFloat(f, 'g', -1, 64)
	case a == 0:
		return "0"
	case a >= 1e15 || a < 1e-4:
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	// Digits after the point so that four significant figures show, and
	// none past the point for large numbers.
	decimals := max(0, 3-int(math.Floor(math.Log10(a))))
	s := strconv.FormatFloat(f, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// exact formats v for CSV: every digit that distinguishes it.
func exact(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	}
	return Cell(v)
}

// numeric reports whether v is a number, which text tables right-align.
func numeric(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

// grid is a table's header and formatted cells, and which columns hold
// numbers.
type grid struct {
	header []string
	cells  [][]string
	right  []bool
}

func newGrid(header []string, rows [][]any) grid {
	g := grid{header: header, right: make([]bool, len(header))}
	for i := range header {
		num, any := true, false
		for _, row := range rows {
			if row[i] != nil {
				any = true
				num = num && numeric(row[i])
			}
		}
		g.right[i] = num && any
	}
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = Cell(v)
		}
		g.cells = append(g.cells, cells)
	}
	return g
}

func resultGrid(r *sim.Result) grid {
	cols := Columns(r)
	rows := make([][]any, len(r.Rows))
	for i, row := range r.Rows {
		rows[i] = make([]any, len(cols))
		for j, c := range cols {
			rows[i][j] = row[c]
		}
	}
	return newGrid(cols, rows)
}

func claimGrid(claims []sim.Claim) grid {
	rows := make([][]any, len(claims))
	for i, c := range claims {
		holds := "**DIFFERS**"
		if c.Holds {
			holds = "holds"
		}
		if s := seedSummary(c); s != "" {
			holds += " (" + s + ")"
		}
		rows[i] = []any{c.Claim, c.Measured, holds, c.Source}
	}
	return newGrid([]string{"claim", "measured: median [min-max over seeds]", "verdict", "source"}, rows)
}

// writeText writes g as columns separated by two spaces, numbers aligned
// right, with a rule under the header.
func (g grid) writeText(w io.Writer) error {
	width := make([]int, len(g.header))
	for i, h := range g.header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, row := range g.cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if g.right[i] {
				b.WriteString(pad + c)
			} else if i < len(cells)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		// Right-aligned empty cells at the end leave blanks behind.
		trimmed := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(trimmed)
		b.WriteByte('\n')
	}
	line(g.header)
	rule := make([]string, len(width))
	for i, n := range width {
		rule[i] = strings.Repeat("-", n)
	}
	line(rule)
	for _, row := range g.cells {
		line(row)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdown writes g as a GitHub-flavoured Markdown table.
func (g grid) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteByte('|')
		for _, c := range cells {
			b.WriteString(" " + escapeMarkdown(c) + " |")
		}
		b.WriteByte('\n')
	}
	line(g.header)
	b.WriteByte('|')
	for _, r := range g.right {
		if r {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteByte('\n')
	for _, row := range g.cells {
		line(row)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escapeMarkdown keeps a cell inside its column: a pipe would end it and a
// newline would end the table.
func escapeMarkdown(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", "").Replace(s)
}

// Text writes r's rows as an aligned text table.
func Text(w io.Writer, r *sim.Result) error { return resultGrid(r).writeText(w) }

// ClaimsText writes claims as a list: whether each holds, the claim, what
// was measured and the source. Sources are long (titles and URLs), so a
// list reads better on a terminal than a table. Nothing is written when
// there are no claims.
func ClaimsText(w io.Writer, claims []sim.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("Claims:\n")
	for _, c := range claims {
		verdict := "holds  "
		if !c.Holds {
			verdict = "DIFFERS"
		}
		fmt.Fprintf(&b, "  %s  %s\n", verdict, oneLine(c.Claim))
		fmt.Fprintf(&b, "           measured: %s\n", oneLine(c.Measured))
		if s := seedSummary(c); s != "" {
			fmt.Fprintf(&b, "           seeds:    %s\n", s)
		}
		fmt.Fprintf(&b, "           source:   %s\n", oneLine(c.Source))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine keeps a claim's field on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// Markdown writes r's rows as a Markdown table.
func Markdown(w io.Writer, r *sim.Result) error { return resultGrid(r).writeMarkdown(w) }

// ClaimsMarkdown writes claims as a Markdown table; nothing when there are
// none.
func ClaimsMarkdown(w io.Writer, claims []sim.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	return claimGrid(claims).writeMarkdown(w)
}

// CSV writes r's rows as CSV (RFC 4180) with a header line, numbers in
// full precision.
func CSV(w io.Writer, r *sim.Result) error {
	cols := Columns(r)
	cw := csv.NewWriter(w)
	if err := cw.Write(cols); err != nil {
		return err
	}
	rec := make([]string, len(cols))
	for _, row := range r.Rows {
		for i, c := range cols {
			rec[i] = exact(row[c])
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// seedSummary says on how many seeds a claim was judged and which ones
// disagree: "5 seeds (1-5)" or "5 seeds (1-5); differs on 3, 5".
func seedSummary(c sim.Claim) string {
	if len(c.Seeds) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d seeds (%d-%d)", len(c.Seeds), c.Seeds[0], c.Seeds[len(c.Seeds)-1])
	if len(c.Seeds) == 1 {
		s = fmt.Sprintf("seed %d", c.Seeds[0])
	}
	if c.Pooled {
		s += " pooled"
	}
	if len(c.Differs) > 0 {
		ds := make([]string, len(c.Differs))
		for i, d := range c.Differs {
			ds[i] = strconv.FormatUint(d, 10)
		}
		if c.Pooled {
			s += "; alone, too few samples to judge, seeds " + strings.Join(ds, ", ") + " differ"
		} else {
			s += "; differs on " + strings.Join(ds, ", ")
		}
	}
	return s
}
