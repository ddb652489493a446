package overload

import (
	"encoding/json"
	"os"
	"time"
)

// JSONEnv names the environment variable that, when set, names the file
// Run writes its results to as JSON (a jsonRun), for
// bench/cmd/overloadchart to draw.
const JSONEnv = "UNHERD_RELIABILITY_OVERLOAD_JSON"

// jsonRun is Run's results as JSON. Every rate is over the server's
// capacity (workers / mean service time), so 1 is the most the server
// can serve.
type jsonRun struct {
	Scale        string    `json:"scale"`         // "suite" or "full"
	Seed         uint64    `json:"seed"`          // UNHERD_RELIABILITY_SEED
	Workers      int       `json:"workers"`       // the server's workers
	PhaseSeconds float64   `json:"phase_seconds"` // the length of each phase
	Capacity     float64   `json:"capacity"`      // requests per second
	Timeout      float64   `json:"timeout_s"`     // each caller's timeout
	Rows         []jsonRow `json:"rows"`          // one per protection, in the table's order
}

// jsonRow is one protection's run.
type jsonRow struct {
	Protection string `json:"protection"`
	// Judged is true for the row checked against the goals.
	Judged bool `json:"judged"`
	// HarnessFailed, if not empty, says how the machine failed to run
	// the harness as designed: the row's figures measure the machine too.
	HarnessFailed string      `json:"harness_failed,omitempty"`
	Phases        []jsonPhase `json:"phases"` // 0.5x, 2x, 4x, 0.5x after
}

// jsonPhase is one phase of a row, as the table reports it.
type jsonPhase struct {
	Phase   string  `json:"phase"`   // the phase's name
	Offered float64 `json:"offered"` // calls drawn per second, over capacity
	Goodput float64 `json:"goodput"` // successes per second, over capacity
	// P99 is the p99 latency of successful calls at the caller, retries
	// included; AdmittedP99 that of admitted requests' work, handler
	// entry to its end. Both in milliseconds, 0 when there were none.
	P99         float64 `json:"p99_ms"`
	AdmittedP99 float64 `json:"admitted_p99_ms"`
	// Wasted is the share of the phase's worker time spent for callers
	// who had gone.
	Wasted float64 `json:"wasted"`
	// Critical is the share of critical calls that succeeded.
	Critical float64 `json:"critical_success"`
}

// newJSONRow turns one row's results into their JSON form.
func newJSONRow(row Row, res []phaseResult) jsonRow {
	r := jsonRow{Protection: row.Name, Judged: row.Judged, HarnessFailed: harnessFailed(res)}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, p := range res {
		r.Phases = append(r.Phases, jsonPhase{
			Phase:       p.phase.name,
			Offered:     p.offered / p.capacity,
			Goodput:     p.goodput / p.capacity,
			P99:         msOf(p.p99),
			AdmittedP99: msOf(p.admittedP99),
			Wasted:      p.wasted,
			Critical:    p.criticalRate(),
		})
	}
	return r
}

// writeJSON writes run, indented, to the file at path.
func writeJSON(path string, run jsonRun) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
