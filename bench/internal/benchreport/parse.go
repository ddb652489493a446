package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// result is one line of benchmark output: one run of one case.
type result struct {
	scenario string             // "FirstSuccess" for BenchmarkFirstSuccess/unherd-2
	lib      string             // "unherd"
	values   map[string]float64 // by unit: "ns/op", "allocs/op", ...
}

// procSuffix is the -GOMAXPROCS suffix go test appends to a name.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output and returns its benchmark lines.
// Other lines (headers, PASS, ok) are skipped.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		scenario, lib, ok := strings.Cut(name, "/")
		if !ok {
			return nil, fmt.Errorf("benchmark %q has no library sub-benchmark", f[0])
		}
		res := result{scenario: scenario, lib: lib, values: map[string]float64{}}
		// f[1] is the iteration count; value-unit pairs follow.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %w", f[0], f[i], err)
			}
			res.values[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// medians returns, for one scenario, each library's median value of each
// unit over its runs, and the libraries in the order they first ran.
func medians(results []result, scenario string) table {
	runs := map[string]map[string][]float64{}
	var order []string
	for _, r := range results {
		if r.scenario != scenario {
			continue
		}
		if runs[r.lib] == nil {
			runs[r.lib] = map[string][]float64{}
			order = append(order, r.lib)
		}
		for unit, v := range r.values {
			runs[r.lib][unit] = append(runs[r.lib][unit], v)
		}
	}
	t := table{libs: order, median: map[string]map[string]float64{}, runs: runs}
	for lib, units := range runs {
		t.median[lib] = map[string]float64{}
		for unit, vs := range units {
			t.median[lib][unit] = median(vs)
		}
	}
	return t
}

// table is one scenario's medians, median[lib][unit], and the runs they
// come from, runs[lib][unit], in the order they ran.
type table struct {
	libs   []string
	median map[string]map[string]float64
	runs   map[string]map[string][]float64
}

// paired returns f(a, b) of unit round by round (the k-th run of a with
// the k-th run of b): the median over rounds and the range. It returns
// false if the two have no runs or a different number of them. Load that
// changes between rounds moves both runs of a round alike, so this is
// steadier than comparing the medians.
func (t table) paired(a, b, unit string, f func(a, b float64) float64) (spread, bool) {
	ra, rb := t.runs[a][unit], t.runs[b][unit]
	if len(ra) == 0 || len(ra) != len(rb) {
		return spread{}, false
	}
	r := make([]float64, len(ra))
	for i := range ra {
		r[i] = f(ra[i], rb[i])
	}
	return spreadOf(r), true
}
