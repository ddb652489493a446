package unherdprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/budget"
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/unherdprom"
)

// A retry policy observed as "payments": one call that fails once, then
// succeeds.
func ExampleMetrics_Observer() {
	reg := prometheus.NewRegistry()
	m, err := unherdprom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := retry.New(retry.Config{Observer: m.Observer("payments"), Budget: budget.Unlimited,
		Backoff: backoff.Schedule{Immediate: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	failed := false
	_ = p.Do(context.Background(), func(context.Context) error {
		if !failed {
			failed = true
			return errors.New("connection reset")
		}
		return nil
	})
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP unherd_retry_attempts_total Attempts admitted by a retry policy, first attempts included.
# TYPE unherd_retry_attempts_total counter
unherd_retry_attempts_total{policy="payments"} 2
`), "unherd_retry_attempts_total")
	fmt.Println(err)
	families, _ := reg.Gather()
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Println(f.GetName(), labels(m), v)
			}
		}
	}
	// Output:
	// <nil>
	// unherd_retry_attempts_total policy=payments 2
	// unherd_retry_calls_total outcome=success,policy=payments 1
	// unherd_retry_retries_total class=transient,policy=payments 1
}

func labels(m *dto.Metric) string {
	var s []string
	for _, l := range m.GetLabel() {
		s = append(s, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(s, ",")
}
