package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/unherd/unherd/budget"
)

// docFigure is one figure the documentation quotes: quote appears in
// file, produced appears in what source produces, and every number in
// quote is one of produced's numbers.
type docFigure struct {
	file     string // relative to the repository root
	quote    string
	source   string // "report" (docs/report/report.md), "whatif", "fleet" or "budget"
	produced string
}

// whatIfFive is the policy docs/experiments.md judges with unherd whatif.
const whatIfFive = "attempts: 5\njitter: none\nbudget: none\n"

const (
	readme = "README.md"
	exps   = "docs/experiments.md"
)

var docFigures = []docFigure{
	// README.md: the default policy, and the report's outage chart.
	{readme, "3 attempts, full jitter from 50 ms, cap 20 s", "whatif", "Default (unherd default): 3 attempts, full jitter from 50ms capped at 20s"},
	{readme, "1000 clients call a dependency that is down for 30 s after the first 10 s", "report", "| `before` | `10s` | | `cap` | `10s` | | `capacity` | `20000` | | `clients` | `1000` | | `down` | `30s` |"},
	{readme, "on five seeds", "report", "on 5 seeds"},
	{readme, "(the AWS SDKs' Retry Behavior 2.1 quota: 500 tokens, 14 a retry, 5 after throttling; `budget.AWSStandardQuota` is the older 2.0 quota, 5 a retry)", "budget", "Retry Behavior 2.1 quota (the default): 500 tokens, 14 a retry, 5 after throttling; Retry Behavior 2.0 quota (AWSStandardQuota): 5 a retry"},

	// docs/experiments.md, section by section.
	{exps, "on five seeds", "report", "on 5 seeds"},
	{exps, "down for 30 s. A closed population of 1000 clients", "report", "1000 clients and a dependency down for 30 s"},
	{exps, "Offered load during a 30 s outage", "report", "a dependency down for 30 s"},
	{exps, "offers 14291/s before the outage", "report", "(14291 [14254-14310]/s before it)"},
	{exps, "without backoff it offers 38099/s through it, with full jitter 1304/s", "report", "mean load during the outage 1304 [1286-1308]/s with full jitter vs 38099 [38071-38123]/s without backoff"},
	{exps, "A fixed 1 s delay", "report", "| `fixed` | `1s` |"},
	{exps, "load is 8.6 and 16.3, against 1.4 with full jitter", "report", "fixed 8.6 [8.4-9.0], exponential 16.3 [15.6-16.7], full jitter 1.4 [1.3-1.4]"},
	{exps, "makes 7.57 attempts per call during the outage, against 7.98 without backoff", "report", "attempts per call during the outage 7.57 with full jitter vs 7.98 without backoff"},
	{exps, "holds it to 1.00", "report", "attempts per call during the outage 1.00 with a token-bucket budget"},
	{exps, "holds the load to 4/s (66.1% of calls succeed against 75.2% without it)", "report", "mean load during the outage 4/s with a breaker vs 75719 [75716-75726]/s without (10000/s before it); success 66.1 [65.9-67.5]% vs 75.2%"},
	{exps, "throttling to 6209/s", "report", "mean load during the outage 6209 [6188-6210]/s with the throttle"},
	{exps, "load falls to 1039/s against full jitter's 1304/s, but 96.9% of calls succeed against 99.6%", "report", "mean load during the outage 1039 [1038-1041]/s with full jitter and a budget vs 1304 [1286-1308]/s with full jitter alone (14262 [14250-14330]/s before it); success 96.9% vs 99.6%"},
	{exps, "at 190 clients, full jitter makes 1770 calls where exponential backoff without jitter makes 5170, a ratio of 0.34", "report", "at 190 clients: full 1770 [1762-1774] calls vs exponential 5170 [5128-5192]: ratio 0.34 [0.34-0.35]"},
	{exps, "differ from full jitter's by -0.5% at 190 clients", "report", "equal over full at 10, 40, 70, 100, 130, 160, 190 clients: calls 8.7 [6.8-14.0]%, 5.2 [3.7-5.6]%, 3.4 [2.5-4.1]%, 2.3 [1.8-2.5]%, 1.1 [0.6-1.7]%, 0.5 [-0.2-0.6]%, -0.5 [-1.1--0.2]%"},
	{exps, "-20.2% at 40 clients (sooner) but by 6.7% at 190", "report", "decorrelated over full at 10, 40, 70, 100, 130, 160, 190 clients: time 8.8 [-14.0-18.8]%, -20.2 [-34.0--11.0]%, -10.3 [-12.8--5.8]%, -12.8 [-16.2--0.1]%, 2.0 [-3.9-4.3]%, 4.1 [3.5-5.4]%, 6.7 [-3.3-12.3]%"},
	{exps, "3000 workers behind a rate limit use 26.8% of it without jitter and 82.3% with full jitter", "report", "| 3000 x 10 | exponential | 26.8 |"},
	{exps, "3000 workers behind a rate limit use 26.8% of it without jitter and 82.3% with full jitter", "report", "| 3000 x 10 | full jitter | 82.3 |"},
	{exps, "about 35% and 85%", "report", "35% and 85% of it would take"},
	{exps, "Against a limit of 20/s the same work takes 51.0 minutes without jitter and 25.1 with full jitter", "report", "the same 3000 x 10 requests against a limit of 20/s (25 min at the limit; 35% and 85% of it would take 71 and 29 min): 51.0 [50.5-51.1] min without jitter (49 [49-50]% of the limit), 25.1 min with full jitter"},
	{exps, "100 calls/s against a failing backend become 200.0/s with one retry", "report", "100 calls/s against a failing backend"},
	{exps, "100 calls/s against a failing backend become 200.0/s with one retry", "report", "open stream, 2 attempts: 200.0 [199.9-200.0]/s"},
	{exps, "a 10% ratio budget holds the load at 110.0/s", "report", "a 10% ratio budget holds the load near 110/s | open stream, 5 attempts with the ratio budget: 110.0 [109.9-110.0]/s"},
	{exps, "a token bucket at 100.0/s once it is empty", "report", "open stream, 5 attempts with the token bucket: 100.0/s"},
	{exps, "Three layers of 4 attempts send 64.00 attempts per request", "report", "3 layers of 4 attempts send 64 attempts per request to the dependency | 64.00 attempts per request"},
	{exps, "retrying at the edge only sends 4.00", "report", "retrying at the edge only sends 4 | 4.00 attempts per request"},
	{exps, "In a 1000-way fan-out", "report", "a 10ms hedge cuts the p99.9 of a 1000-way fan-out"},
	{exps, "a fixed 10 ms hedge cuts the p99.9 from 927 ms to 28 ms for 1.3% more requests", "report", "| stalled | fixed hedge | 13.6 | 21.6 | 28.4 | 1.3 | 1.2 | 10 |"},
	{exps, "a fixed 10 ms hedge cuts the p99.9 from 927 ms to 28 ms for 1.3% more requests", "report", "p99.9 927 ms to 28 ms (32.7x) for 1.3% more requests"},
	{exps, "(after the p95 of recent latencies) to 28 ms for 5.0% more requests", "report", "hedging after the 95th-percentile latency (unherd's default hedger) cuts the p99.9 by an order of magnitude while keeping extra requests near 5% (at most 6%) | 5 seeds pooled (20000 requests per strategy, 20 beyond the p99.9): p99.9 927 ms to 28 ms (33.1x) for 5.0% more requests"},
	{exps, "a fixed hedge sends 98.0% more requests", "report", "with a fixed hedge (98.0% more requests"},
	{exps, "sends 0.07% more", "report", "with the default hedger (0.07% more requests"},
	{exps, "In the report, 20000 clients in a 10 s outage send 40032 retries per second with per-client floors and 1981 per second", "report", "| `clients` | `20000` |"},
	{exps, "In the report, 20000 clients in a 10 s outage send 40032 retries per second with per-client floors and 1981 per second", "report", "| `outage` | `10s` |"},
	{exps, "In the report, 20000 clients in a 10 s outage send 40032 retries per second with per-client floors and 1981 per second", "report", "per-client floors: 40032 [39977-40042] retries per second from 20000 clients"},
	{exps, "In the report, 20000 clients in a 10 s outage send 40032 retries per second with per-client floors and 1981 per second", "report", "fleet budget: 19809 [19644-19844] retries in the outage against a bound of 44283 [44114-44301]; 1981 [1964-1984] per second"},
	{exps, "At 100,000 clients", "fleet", "per-client floors: 200166 retries per second from 100000 clients"},
	{exps, "the figures are 200166 and 9852 retries per second, 11708 in the busiest second", "fleet", "per-client floors 1000831 2001662 200166 202046"},
	{exps, "the figures are 200166 and 9852 retries per second, 11708 in the busiest second", "fleet", "fleet budget 1001423 98522 9852 11708"},
	{exps, "they send 2.48x the dependency's capacity through the outage, where the default sends 0.50x, for a goodput of 67.5% of the fault-free rate against 66.7%", "whatif", "sends 2.48x the dependency's capacity during the outage (peak 2.52x), where the default sends 0.50x (peak 0.52x); goodput 67.5% of the fault-free rate (default 66.7%)"},
	{exps, "(0.28x against 0.47x)", "whatif", "0.28x the capacity during the outage (default 0.47x)"},
	{exps, "(goodput 66.8% against 66.7%)", "whatif", "similar to the default: goodput 66.8% of the fault-free rate (default 66.7%)"},
	{exps, "attempts: 5", "whatif", "readme-five"}, // the policy file is whatIfFive
	{exps, "an open stream of 8300 requests/s called it with a 3s timeout", "report", "| `rate` | `8300` |"},
	{exps, "an open stream of 8300 requests/s called it with a 3s timeout", "report", "callers resending at once after a 3s timeout"},
	{exps, "A 78% cut for 10s recovers", "report", "the server's CPU cut by 78% for 10s at full load, callers resending at once after a 3s timeout: the system recovers"},
	{exps, "80% for 10s stays down", "report", "the server's CPU cut by 80% for 10s at full load, callers resending at once after a 3s timeout: the system stays down"},
	{exps, "80% for 9s recovers", "report", "the server's CPU cut by 80% for 9s at full load, callers resending at once after a 3s timeout: the system recovers"},
	{exps, "80% for 10s at 30% lower load recovers", "report", "the server's CPU cut by 80% for 10s at 30% lower load, callers resending at once after a 3s timeout: the system recovers"},
	{exps, "The map tries cuts of 60% to 95% of the CPU for 2s to 30s, for three", "report", "cuts of 60% to 95% of its CPU for 2s to 30s"},
	{exps, "stay down from 20s at 70%, 15s at 75%, 10s at 80%, and 8s at 85%, 8s at 90%, 8s at 95%; after no trigger of 60%, 65% up to 30s", "report",
		"callers resending at once stay down from 20s at 70%, 15s at 75%, 10s at 80%, 8s at 85%, 8s at 90%, 8s at 95% (after no trigger of 60%, 65% up to 30s)"},
	{exps, "it now stops at 33 s with a queue peak of 310573", "report", "queue peak 310573 [308081-316980], 73.1 [73.0-73.2]% of the work for callers gone; stopped at 33 s"},
	{exps, "a cut of 90% for 8s to the server's CPU leaves it down for good", "whatif", "a cut of 90% for 8s to the server's CPU leaves it down for good"},
	{exps, "the server recovers from every trigger mapped, up to 95% for 30s", "whatif", "the server recovers from every trigger mapped, up to 95% for 30s"},
}

var (
	// numberRE finds numbers that stand alone: not the 6 of A6 or the
	// 99.9 of p99.9.
	numberRE = regexp.MustCompile(`(?:^|[^\w.])(-?\d[\d,]*(?:\.\d+)?)`)
	fenceRE  = regexp.MustCompile("(?s)```.*?```")
	codeRE   = regexp.MustCompile("`[^`]*`")
	linkRE   = regexp.MustCompile(`\]\([^)]*\)`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

func numbers(s string) []string {
	var ns []string
	for _, m := range numberRE.FindAllStringSubmatch(s, -1) {
		ns = append(ns, strings.TrimRight(strings.ReplaceAll(m[1], ",", ""), ","))
	}
	return ns
}

// budgetQuotas describes the default token bucket's quota and the older
// one, from package budget: the default is AWS2026Quota, Retry Behavior
// 2.1's, which the test checks before it names it so.
func budgetQuotas(t *testing.T) string {
	def := budget.TokenBucketConfig{
		Capacity:         budget.DefaultCapacity,
		TransientCost:    budget.DefaultTransientCost,
		TimeoutCost:      budget.DefaultTimeoutCost,
		ThrottledCost:    budget.DefaultThrottledCost,
		SuccessIncrement: budget.DefaultSuccessIncrement,
	}
	if def != budget.AWS2026Quota() {
		t.Errorf("the default token bucket %+v is not budget.AWS2026Quota() %+v: the README names it as Retry Behavior 2.1's", def, budget.AWS2026Quota())
	}
	return fmt.Sprintf("Retry Behavior 2.1 quota (the default): %d tokens, %d a retry, %d after throttling; Retry Behavior 2.0 quota (AWSStandardQuota): %d a retry",
		def.Capacity, def.TransientCost, def.ThrottledCost, budget.AWSStandardQuota().TransientCost)
}

func squash(s string) string { return spaceRE.ReplaceAllString(s, " ") }

// TestDocFigures checks every figure README.md and docs/experiments.md
// quote against what produces it: the committed report, unherd whatif on
// the quoted policy and unherd sim fleet at its default size, seed 1
// (only without -short and -race). A
// number in their prose that no entry of docFigures covers fails the
// test, so a new figure needs a source here.
func TestDocFigures(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return squash(string(b))
	}
	sources := map[string]string{"report": read("docs/report/report.md"), "budget": budgetQuotas(t)}

	policy := filepath.Join(t.TempDir(), "readme-five.yaml")
	if err := os.WriteFile(policy, []byte(whatIfFive), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"whatif", "--policy", policy, "--quiet"}, &out, &errOut); code != exitOK {
		t.Fatalf("whatif: exit code %d: %s", code, errOut.String())
	}
	sources["whatif"] = squash(out.String())
	// sim fleet at 100,000 clients takes a few seconds of CPU, ten times
	// that under the race detector: its figures are checked only without
	// either (go test ./cmd/unherd).
	fleet := !testing.Short() && !raceEnabled
	if fleet {
		out.Reset()
		if code := run([]string{"sim", "fleet", "--quiet"}, &out, &errOut); code != exitOK {
			t.Fatalf("sim fleet: exit code %d: %s", code, errOut.String())
		}
		sources["fleet"] = squash(out.String())
	} else {
		t.Log("not running sim fleet (-short or -race): its figures are checked in the docs only")
	}

	docs := map[string]string{}
	covered := map[string][]string{}
	for _, f := range docFigures {
		doc, ok := docs[f.file]
		if !ok {
			doc = read(f.file)
			docs[f.file] = doc
		}
		if !strings.Contains(doc, f.quote) {
			t.Errorf("%s does not quote %q", f.file, f.quote)
		}
		src, ok := sources[f.source]
		if ok && !strings.Contains(src, f.produced) {
			t.Errorf("%s: %s does not produce %q (quoted as %q)", f.file, f.source, f.produced, f.quote)
		}
		covered[f.file] = append(covered[f.file], numbers(f.quote)...)
	}
	// A quote's numbers must come from its sources.
	produced := map[[2]string][]string{}
	for _, f := range docFigures {
		k := [2]string{f.file, f.quote}
		produced[k] = append(produced[k], numbers(f.produced)...)
	}
	for k, ps := range produced {
		if k[1] == "attempts: 5" {
			continue // the policy file: whatIfFive
		}
		for _, n := range numbers(k[1]) {
			if !slices.Contains(ps, n) {
				t.Errorf("%s quotes %s in %q; its sources produce %v", k[0], n, k[1], ps)
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(whatIfFive), "\n") {
		if !strings.Contains(docs[exps], line) {
			t.Errorf("%s does not show the policy's line %q", exps, line)
		}
	}
	// Every number in the prose has a source.
	for file := range docs {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		prose := fenceRE.ReplaceAllString(string(b), " ")
		prose = linkRE.ReplaceAllString(prose, "]")
		prose = codeRE.ReplaceAllString(prose, " ")
		for _, n := range numbers(prose) {
			if !slices.Contains(covered[file], n) {
				t.Errorf("%s quotes %s, which no entry of docFigures produces", file, n)
			}
		}
	}
}
