//go:build reliability

package reliability

import (
	"encoding/json"
	"os"
	"time"
)

// overloadRun is TestOverload's results as JSON, written to the file
// $UNHERD_RELIABILITY_OVERLOAD_JSON names, if set, for
// bench/cmd/overloadchart to draw. Every rate is over the server's
// capacity (workers / mean service time), so 1 is the most the server
// can serve.
type overloadRun struct {
	Scale        string        `json:"scale"`         // "suite" or "full"
	Seed         uint64        `json:"seed"`          // UNHERD_RELIABILITY_SEED
	Workers      int           `json:"workers"`       // the server's workers
	PhaseSeconds float64       `json:"phase_seconds"` // the length of each phase
	Capacity     float64       `json:"capacity"`      // requests per second
	Timeout      float64       `json:"timeout_s"`     // each caller's timeout
	Rows         []overloadRow `json:"rows"`          // one per protection, in the table's order
}

// overloadRow is one protection's run.
type overloadRow struct {
	Protection string `json:"protection"`
	// Judged is true for the row checked against the goals.
	Judged bool `json:"judged"`
	// HarnessFailed, if not empty, says how the machine failed to run
	// the harness as designed: the row's figures measure the machine too.
	HarnessFailed string          `json:"harness_failed,omitempty"`
	Phases        []overloadPhase `json:"phases"` // 0.5x, 2x, 4x, 0.5x after
}

// overloadPhase is one phase of a row, as the table reports it.
type overloadPhase struct {
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

// newOverloadRow turns one protection's results into their JSON form.
func newOverloadRow(pr protectionRow, res []phaseResult) overloadRow {
	r := overloadRow{Protection: pr.name, Judged: pr.judged, HarnessFailed: overloadHarnessFailed(res)}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, p := range res {
		r.Phases = append(r.Phases, overloadPhase{
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

// writeOverloadJSON writes run, indented, to the file at path.
func writeOverloadJSON(path string, run overloadRun) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
