package unherdprom_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/unherd/unherd/internal/observecheck"
	"github.com/unherd/unherd/limit"
	"github.com/unherd/unherd/unherdprom"
)

// find returns the gathered metric named name whose labels are exactly
// want ("k=v,k=v" in label-name order, as labels writes them).
func find(t *testing.T, reg *prometheus.Registry, name, want string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labels(m) == want {
				return m
			}
		}
	}
	t.Fatalf("no %s{%s}", name, want)
	return nil
}

// TestLimiter drives a limiter of 2, observed as "api", through
// refusals, a wait that gets a slot and one that times out, and reads
// each of its metrics.
func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := unherdprom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := limit.New(limit.Config{Algorithm: limit.Fixed(2), MaxWait: 50 * time.Millisecond, MaxWaiters: 1,
			Observer: m.Observer("api")})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(unherdprom.LimiterCollector("api", l)); err != nil {
			t.Fatal(err)
		}
		b, c := observecheck.LimiterOf2(t, l)
		for _, c := range []struct {
			name, labels string
			want         float64
		}{
			{"unherd_concurrency_refusals_total", "policy=api,priority=sheddable", 1},
			{"unherd_concurrency_refusals_total", "policy=api,priority=normal", 2},
			{"unherd_concurrency_refusals_total", "policy=api,priority=critical", 0},
		} {
			if v := find(t, reg, c.name, c.labels).GetCounter().GetValue(); v != c.want {
				t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, v, c.want)
			}
		}
		for _, c := range []struct {
			labels string
			count  uint64
			sum    float64
		}{
			{"policy=api,priority=critical,result=admitted", 1, 0.02},
			{"policy=api,priority=normal,result=gave_up", 1, 0.05},
			{"policy=api,priority=normal,result=admitted", 0, 0},
		} {
			h := find(t, reg, "unherd_concurrency_queue_duration_seconds", c.labels).GetHistogram()
			if h.GetSampleCount() != c.count || h.GetSampleSum() < c.sum-1e-9 || h.GetSampleSum() > c.sum+1e-9 {
				t.Errorf("queue duration{%s}: count %d, sum %v; want %d, %v", c.labels, h.GetSampleCount(), h.GetSampleSum(), c.count, c.sum)
			}
		}
		gauges := func(inFlight int) string {
			return `
# HELP unherd_concurrency_in_flight Requests a concurrency limiter has admitted and not yet released.
# TYPE unherd_concurrency_in_flight gauge
unherd_concurrency_in_flight{policy="api"} ` + strconv.Itoa(inFlight) + `
# HELP unherd_concurrency_limit A concurrency limiter's limit: how many requests it may have in flight at once.
# TYPE unherd_concurrency_limit gauge
unherd_concurrency_limit{policy="api"} 2
`
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges(2)), "unherd_concurrency_limit", "unherd_concurrency_in_flight"); err != nil {
			t.Error(err)
		}
		b.Served(time.Now())
		c.Served(time.Now())
		// Read at the scrape: the gauges follow the limiter without an event.
		if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges(0)), "unherd_concurrency_limit", "unherd_concurrency_in_flight"); err != nil {
			t.Error(err)
		}
	})
}

// TestLimiterCollectorAdaptive: the limit gauge follows an adaptive
// limit as releases move it.
func TestLimiterCollectorAdaptive(t *testing.T) {
	l, drop := observecheck.AdaptiveLimiter(t)
	col := unherdprom.LimiterCollector("db", l)
	drop()
	if n := testutil.CollectAndCount(col); n != 2 {
		t.Errorf("%d metrics collected, want 2", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	if v := find(t, reg, "unherd_concurrency_limit", "policy=db").GetGauge().GetValue(); v != float64(l.Limit()) || v >= 10 {
		t.Errorf("limit gauge %v, limiter's limit %d (from 10, after a drop)", v, l.Limit())
	}
}
