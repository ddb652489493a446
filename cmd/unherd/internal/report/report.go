package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/unherd/unherd/cmd/unherd/internal/chart"
	"github.com/unherd/unherd/cmd/unherd/internal/table"
	"github.com/unherd/unherd/sim"
)

// Entry is one scenario's part of the report.
type Entry struct {
	// Name is the scenario's name; it heads the section and prefixes the
	// scenario's files.
	Name string
	// Description is the scenario's one-sentence summary.
	Description string
	// Result is what the run produced; nil when Err is set.
	Result *sim.Result
	// Err, if set, is why the scenario produced no result.
	Err error
}

// Header is what report.md says about the run as a whole.
type Header struct {
	// Seed is the first seed every scenario ran with, and Seeds the
	// number of seeds (Seed, Seed+1, ...).
	Seed  uint64
	Seeds int
	// Command is the command line that reproduces the report.
	Command string
}

// populations explains each population kind in a sentence.
var populations = map[string]string{
	"closed":          "a fixed set of clients that wait for each answer: backoff protects the dependency from them",
	"open":            "new requests keep arriving whatever happens: only budgets and throttling bound the load",
	"closed and open": "run both ways: a fixed set of waiting clients, and a stream whose arrivals do not wait",
}

// Write writes report.md, the charts and the CSV files into dir, creating
// it if needed. It returns the paths it wrote, report.md first. Charts
// that cannot be drawn (no finite data) are noted in report.md and do not
// stop the report.
func Write(dir string, h Header, entries []Entry) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var md bytes.Buffer
	var files []string
	md.WriteString("# unherd report\n\n")
	seeds := fmt.Sprintf("seed %d", h.Seed)
	if h.Seeds > 1 {
		seeds = fmt.Sprintf("%d seeds (%d to %d)", h.Seeds, h.Seed, h.Seed+uint64(h.Seeds)-1)
	}
	fmt.Fprintf(&md, "Every scenario of the simulator at its report size, on %s. Table cells are medians over "+
		"the seeds; a chart draws the median over the seeds with their range shaded around it where the seeds measured "+
		"the same points, and the first seed where they did not; a claim holds only if it holds on every seed, and its figures "+
		"give the median with the range over the seeds in brackets. Rerun it with `%s`; "+
		"run one scenario, one seed, with `unherd sim NAME`.\n\n", seeds, h.Command)
	for _, e := range entries {
		fmt.Fprintf(&md, "- [%s](#%s): %s\n", e.Name, anchor(e.Name), e.Description)
	}
	for _, e := range entries {
		written, err := section(&md, dir, e)
		files = append(files, written...)
		if err != nil {
			return files, err
		}
	}
	path := filepath.Join(dir, "report.md")
	if err := create(dir, "report.md", md.Bytes()); err != nil {
		return files, err
	}
	return append([]string{path}, files...), nil
}

// section writes one scenario's part of report.md and its files.
func section(md *bytes.Buffer, dir string, e Entry) ([]string, error) {
	fmt.Fprintf(md, "\n## %s\n\n%s\n\n", e.Name, e.Description)
	if e.Err != nil {
		fmt.Fprintf(md, "**This scenario failed:** %s\n", e.Err)
		return nil, nil
	}
	r := e.Result
	pop := "**" + r.Population + "**"
	if why, ok := populations[r.Population]; ok {
		pop += " (" + why + ")"
	}
	fmt.Fprintf(md, "Population: %s.\n\n", pop)
	writeParams(md, r.Params)

	base := safeName(e.Name)
	csvName := base + ".csv"
	md.WriteString("### Results\n\n")
	if err := table.Markdown(md, r); err != nil {
		return nil, err
	}
	fmt.Fprintf(md, "\nAs CSV: [%s](%s)\n", csvName, csvName)
	var files []string
	var buf bytes.Buffer
	if err := table.CSV(&buf, r); err != nil {
		return nil, err
	}
	if err := writeFile(dir, csvName, buf.Bytes(), &files); err != nil {
		return files, err
	}
	if len(r.Claims) > 0 {
		md.WriteString("\n### Claims\n\n")
		if err := table.ClaimsMarkdown(md, r.Claims); err != nil {
			return files, err
		}
	}
	for _, c := range r.Charts {
		name := safeName(c.Name)
		if !strings.HasPrefix(name, base) {
			name = base + "-" + name
		}
		fmt.Fprintf(md, "\n### %s\n\n", cmp.Or(c.Title, c.Name))
		drawn := true
		for _, format := range chart.Formats {
			buf.Reset()
			if err := chart.Write(&buf, c, format); err != nil {
				fmt.Fprintf(md, "Chart not drawn: %s\n", err)
				drawn = false
				break
			}
			if err := writeFile(dir, name+"."+format, buf.Bytes(), &files); err != nil {
				return files, err
			}
		}
		if drawn {
			fmt.Fprintf(md, "![%s](%s.png)\n\n[SVG](%s.svg)\n", cmp.Or(c.Title, c.Name), name, name)
		}
	}
	return files, nil
}

func writeFile(dir, name string, data []byte, files *[]string) error {
	if err := create(dir, name, data); err != nil {
		return err
	}
	*files = append(*files, filepath.Join(dir, name))
	return nil
}

// ErrLink is wrapped by the error Write returns when a file it would write
// is a symbolic link: the report never writes through one, which could
// overwrite a file outside its folder.
var ErrLink = errors.New("report: the output file is a symbolic link; remove it or choose another --out folder")

// create writes data to the file name in dir, replacing a regular file
// but never writing through a link: the data goes to a new file in dir,
// which then takes the name's place, so a link planted under the name is
// replaced, not followed, and no path leaves dir (os.Root).
func create(dir, name string, data []byte) (err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s", ErrLink, filepath.Join(dir, name))
	}
	tmp := fmt.Sprintf(".%s.%d.tmp", name, os.Getpid())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// writeParams writes the parameters as a two-column table, sorted by name.
func writeParams(md *bytes.Buffer, params map[string]any) {
	if len(params) == 0 {
		return
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	md.WriteString("| parameter | value |\n| --- | --- |\n")
	for _, k := range names {
		fmt.Fprintf(md, "| `%s` | `%s` |\n", k, strings.ReplaceAll(Value(params[k]), "|", `\|`))
	}
	md.WriteString("\n")
}

// Value formats a parameter value: strings and durations as they read,
// numbers as table cells, lists and maps as JSON.
func Value(v any) string {
	switch v := v.(type) {
	case string, fmt.Stringer, float64, float32, int, int64, uint64, bool, nil:
		return table.Cell(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// safeName keeps letters, digits, '-' and '_' so that a name is a safe
// file name on every system.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "unnamed"
	}
	return b.String()
}

// anchor is the fragment GitHub gives a heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}
