package policy_test

import (
	"fmt"

	"github.com/unherd/unherd/cmd/unherd/internal/policy"
)

func ExampleParse() {
	p, err := policy.Parse("checkout.yaml", []byte(`
attempts: 4
base: 100ms
cap: 2s
jitter: decorrelated
budget:
  kind: ratio
  ratio: 0.1
`))
	fmt.Println(p.Name, p.Retry.MaxAttempts, p.Retry.Backoff.Base, p.Retry.Backoff.Cap, p.Retry.Backoff.Jitter, p.Budget, p.BudgetRatio, err)

	_, err = policy.Parse("checkout.yaml", []byte("attempts: 4\ncap: 2 seconds\n"))
	fmt.Println(err)
	// Output:
	// checkout 4 100ms 2s decorrelated ratio 0.1 <nil>
	// checkout.yaml:2: cap: "2 seconds" is not a duration (want e.g. 2s)
}
