package sim

import (
	"github.com/unherd/unherd/retry"
	"github.com/unherd/unherd/sim/internal/engine"
)

// PolicyParams is a scenario's parameter set that can also run a user's
// retry Policy, as one more row beside the scenario's own. The metastable
// scenario's does: its callers time out, so it applies the policy's
// attempt timeout, which the what-if cannot.
type PolicyParams interface {
	Params
	// SetPolicy sets the policy to run beside the scenario's rows. It
	// refuses, as a *ParamError, a policy that
	// Policy.ValidateFor(UseMetastable) refuses.
	SetPolicy(p Policy) error
}

// msYours is the metastable scenario's row for a user's policy.
const msYours = "yours"

// SetPolicy implements PolicyParams: the scenario runs p as one more row,
// "yours", under the trigger that keeps the resending clients down (Cut
// for Length, at full load), against the server without a limiter. Its
// callers time out after p's Retry.AttemptTimeout, or after Timeout when
// p sets none; the server, which learns each request's deadline, uses the
// same. The row has no published outcome and no claim.
func (p *metastableParams) SetPolicy(pol Policy) error {
	s, err := specOf(pol, UseMetastable)
	if err != nil {
		return err
	}
	p.user = &s
	return nil
}

// withUser returns cases with the user's row after them, if there is a
// user's policy.
func (p *metastableParams) withUser(cases []msCase) []msCase {
	if p.user == nil {
		return cases
	}
	return append(cases, msCase{cut: p.Cut, length: p.Length, load: 1, policy: msYours})
}

// userModel sets m up for the user's row c: the clients' policy built on
// the run's clock and their timeout, the policy's own if it sets one.
func (p *metastableParams) userModel(c msCase, m *msModel) {
	if c.policy != msYours || p.user == nil {
		return
	}
	s := *p.user
	if s.Retry.AttemptTimeout > 0 {
		m.timeout = s.Retry.AttemptTimeout
	}
	m.build = func(e *engine.Engine) (*retry.Policy, error) { return s.build(e) }
}
