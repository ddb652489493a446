package reliability

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/failure"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/retry/engine"
)

// The checks below run in every go test, without the build tag: they read
// RELIABILITY.md, which scripts/reliability.sh writes from a run of the
// suite, and check it against the code as it is now, cheaply. The run
// itself takes minutes and is not repeated here.

// modes are the retry.BudgetExhaustion modes a brown-out row may name
// ("unherd, NAME"); "unherd defaults" is WaitSchedule, the default. A mode
// removed from package retry no longer compiles here, and a mode added
// there that decides unlike all of these fails TestDocumentModes until it
// is named here.
var modes = map[string]retry.BudgetExhaustion{
	"ReturnAtOnce":   retry.ReturnAtOnce,
	"WaitRetryDelay": retry.WaitRetryDelay,
	"WaitSchedule":   retry.WaitSchedule,
}

// brownOutRow is one row of the brown-out table.
type brownOutRow struct {
	client, population string
	during             float64 // load during the fault over load before
	back               time.Duration
	perCaller          float64 // new connections per caller
}

// document returns RELIABILITY.md's header line naming the run and its
// brown-out table's rows.
func document(t *testing.T) (run string, rows []brownOutRow) {
	t.Helper()
	b, err := os.ReadFile("../RELIABILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if i := strings.Index(text, "run of it on "); i >= 0 {
		run, _, _ = strings.Cut(text[i:], "\n\n")
		run = strings.Join(strings.Fields(run), " ")
	}
	_, table, ok := strings.Cut(text, "## Load held through a brown-out")
	if !ok {
		t.Fatal("RELIABILITY.md has no brown-out section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	cell := regexp.MustCompile(`^([\d.]+)x$`)
	for _, line := range strings.Split(table, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 10 || strings.HasPrefix(f[1], " client") || strings.HasPrefix(f[1], " ---") {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		r := brownOutRow{client: f[1], population: f[2]}
		m := cell.FindStringSubmatch(f[5])
		back, err := time.ParseDuration(strings.ReplaceAll(f[7], " ", ""))
		_, per, _ := strings.Cut(f[8], "(")
		per, _, _ = strings.Cut(per, " per caller)")
		perCaller, perr := strconv.ParseFloat(per, 64)
		if m == nil || err != nil || perr != nil {
			t.Fatalf("RELIABILITY.md: brown-out row %q: cannot read during/before %q, goodput back %q or new connections %q", line, f[5], f[7], f[8])
		}
		r.during, _ = strconv.ParseFloat(m[1], 64)
		r.back, r.perCaller = back, perCaller
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("RELIABILITY.md: the brown-out table has no rows")
	}
	return run, rows
}

// suiteClients returns the names of the client types clients_test.go
// runs, read from its source, which only the build tag compiles.
func suiteClients(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("clients_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(b), "var clientTypes = []clientType{")
	if !ok {
		t.Fatal("clients_test.go has no clientTypes")
	}
	list, _, _ = strings.Cut(list, "\n}\n")
	var names []string
	for _, m := range regexp.MustCompile(`name:\s+"([^"]+)"`).FindAllStringSubmatch(list, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestDocument checks that RELIABILITY.md is the suite's output for the
// code as it is: it was written from committed code, its brown-out table
// has a closed and an open row for each client type the suite runs and
// for no other, and unherd's defaults meet what the suite asserts of them
// (and the document says it asserts).
func TestDocument(t *testing.T) {
	run, rows := document(t)
	if !regexp.MustCompile(`^run of it on \d+ cores with go[\w.]+, commit [0-9a-f]{7,40}\.$`).MatchString(run) {
		t.Errorf("RELIABILITY.md names its run as %q, not \"run of it on N cores with goX, commit HASH.\": regenerate it with scripts/reliability.sh from a commit, without local changes", run)
	}
	var want, got []string
	for _, c := range suiteClients(t) {
		want = append(want, c+", closed", c+", open")
	}
	for _, r := range rows {
		got = append(got, r.client+", "+r.population)
	}
	if !slices.Equal(got, want) {
		t.Errorf("RELIABILITY.md's brown-out rows are\n\t%q\nbut the suite runs\n\t%q\nregenerate it with scripts/reliability.sh", got, want)
	}
	for _, r := range rows {
		if r.client != "unherd defaults" {
			continue
		}
		if r.during > 1.2 || r.back > time.Second || r.perCaller >= 2 {
			t.Errorf("RELIABILITY.md: unherd defaults, %s: %.2fx during the fault, goodput back in %v, %.2f new connections per caller; the suite asserts at most 1.2x, 1 s and under 2", r.population, r.during, r.back, r.perCaller)
		}
	}
}

// TestDocumentModes checks the brown-out rows of unherd's modes: each
// names a mode package retry has, and no two name modes that decide
// alike (a row for each would show the noise between two runs of one
// code as a difference between modes). Modes decide alike when the pure
// state machine (engine.Call) gives them the same decisions over a set of
// calls: failures transient, throttled and with a server's delay, a
// budget that refuses the first to the fourth retry or none, the lowest,
// middle and highest draws, and a deadline far off or close.
func TestDocumentModes(t *testing.T) {
	_, rows := document(t)
	known := map[string]string{} // a mode's decisions: the mode's name
	for name, m := range modes {
		known[decisions(t, m)] = name
	}
	if len(known) != len(modes) {
		t.Fatalf("two of the modes %v decide alike: name one of them only", slices.Sorted(maps.Keys(modes)))
	}
	// Every mode package retry accepts decides as one of modes does.
	for v := range 256 {
		m := retry.BudgetExhaustion(v)
		cfg := retry.Config{OnBudgetExhausted: m}
		if cfg.Validate() != nil {
			continue
		}
		if _, ok := known[decisions(t, m)]; !ok {
			t.Errorf("retry.BudgetExhaustion(%d) decides unlike every mode in modes: add it there", v)
		}
	}
	seen := map[string]string{} // a mode's decisions: the row that ran it
	for _, r := range rows {
		if r.population != "closed" {
			continue
		}
		var m retry.BudgetExhaustion
		switch name, ok := strings.CutPrefix(r.client, "unherd, "); {
		case r.client == "unherd defaults":
			m = retry.WaitSchedule
		case !ok:
			continue // not unherd
		default:
			if m, ok = modes[name]; !ok {
				t.Errorf("RELIABILITY.md has a brown-out row for %q, which names no mode of package retry", r.client)
				continue
			}
		}
		d := decisions(t, m)
		if other, ok := seen[d]; ok {
			t.Errorf("RELIABILITY.md has brown-out rows for %q and %q, whose modes decide alike: one row is enough", other, r.client)
		}
		seen[d] = r.client
	}
}

// refusing is a budget that allows the first n retries and refuses the
// rest.
type refusing struct{ n int }

func (b *refusing) Withdraw(failure.Class) bool { b.n--; return b.n >= 0 }
func (*refusing) Record(budget.Attempt)         {}

// decisions returns, as text, the decisions a Policy with OnBudgetExhausted
// m makes over TestDocumentModes's set of calls.
func decisions(t *testing.T, m retry.BudgetExhaustion) string {
	t.Helper()
	errDown := fmt.Errorf("503")
	fails := []error{errDown, retry.Judge(errDown, retry.Verdict{Class: failure.Throttled}), retry.Judge(errDown, retry.Verdict{Class: failure.Throttled, Delay: 300 * time.Millisecond, HasDelay: true})}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out strings.Builder
	for _, fail := range fails {
		for allow := range 5 {
			for _, draw := range []uint64{0, 1 << 63, 1<<64 - 1} {
				for _, deadline := range []time.Duration{time.Minute, 400 * time.Millisecond} {
					p, err := retry.New(retry.Config{
						MaxAttempts:       5,
						Budget:            &refusing{allow},
						OnBudgetExhausted: m,
					})
					if err != nil {
						t.Fatal(err)
					}
					c := engine.Begin(context.Background(), p)
					for {
						if err := c.Admit(t.Context()); err != nil {
							t.Fatal(err)
						}
						d := c.Done(now, now.Add(deadline), fail, draw)
						fmt.Fprintf(&out, "%v %v %v %v;", d.Reason, d.Delay, d.Wait, d.Class)
						if d.Reason != nil {
							break
						}
					}
					out.WriteString("\n")
				}
			}
		}
	}
	return out.String()
}
