package sim

import (
	"testing"
)

// BenchmarkRunFleet runs the fleet experiment at its full size, 100,000
// clients, and reports both budgets' retries per second in the outage.
func BenchmarkRunFleet(b *testing.B) {
	for range b.N {
		res, err := runFleet(fleetParams{}, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Rows[0].RetriesPerSecond, "floors-retries/s")
		b.ReportMetric(res.Rows[1].RetriesPerSecond, "fleet-retries/s")
	}
}

// With 10,000 clients in a 10 s outage (BenchmarkRunFleet runs the
// 100,000), per-client floors let every client retry each request twice,
// more than ten times the fleet budget's retries, while the fleet budget
// holds the fleet to 10% of its requests plus 10 a second.
func TestRunFleet(t *testing.T) {
	res, err := runFleet(fleetParams{Clients: 10_000}, 1)
	if err != nil {
		t.Fatal(err)
	}
	floors, shared := res.Rows[0], res.Rows[1]
	for _, r := range res.Rows {
		t.Logf("%-18s requests %8d retries %8d (%.0f/s, peak %.0f/s), %.2f attempts per request, %d syncs",
			r.Budget, r.Requests, r.Retries, r.RetriesPerSecond, r.PeakPerSecond, r.Amplification, r.Syncs)
	}
	// The fleet budget: in any 10 s window, 10% of the window's requests
	// plus 100. The 10 s before the outage are one window, in which the
	// budget saved up; over the outage's 10 s that is at most 10% of the
	// requests of both spans plus 200, with 10% slack for the window's
	// 500 ms steps.
	if lim := 1.1 * (0.1*float64(shared.Healthy+shared.Requests) + 200); float64(shared.Retries) > lim {
		t.Errorf("fleet budget: %d retries in the outage, want at most %.0f", shared.Retries, lim)
	}
	if floors.Retries < 10*shared.Retries {
		t.Errorf("per-client floors: %d retries, not ten times the fleet budget's %d", floors.Retries, shared.Retries)
	}
}

func TestRunFleetDeterministic(t *testing.T) {
	p := fleetParams{Clients: 1000}
	a, err1 := runFleet(p, 7)
	b, err2 := runFleet(p, 7)
	if err1 != nil || err2 != nil || a != b {
		t.Errorf("two runs with seed 7 differ: %+v %v, %+v %v", a, err1, b, err2)
	}
}
