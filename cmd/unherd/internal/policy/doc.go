// Package policy reads a user's retry policy from a YAML or JSON file into
// a [sim.Policy] (its retry settings a retry.Config), for `unherd whatif`.
//
// A policy file is one mapping. Every field is optional; an omitted field
// takes unherd's default (the defaults of the retry and backoff packages).
// docs/policy.md in the repository is the reference for users; this is
// the same, in brief:
//
//	name: checkout-client   # label in tables; default: the file's name
//	attempts: 4             # counting the first attempt; 0 or omitted: 3
//	base: 50ms              # first retry's delay ceiling; default 50ms
//	cap: 2s                 # largest delay; default 20s
//	jitter: full            # none, full, equal or decorrelated; default full
//	budget: token           # none, token or ratio; default token
//	timeouts:
//	  attempt: 500ms        # each attempt's timeout; default none
//
// The budget may also be a mapping, to set the ratio budget's share; a
// share alone, without kind, is the ratio budget too, and a share with
// another kind is an error:
//
//	budget:
//	  kind: ratio
//	  ratio: 0.2            # retries as a share of requests; default 0.1
//
// timeouts.attempt is applied where callers wait on a server that can be
// slow (the metastable scenario: [ParseFor] with sim.UseMetastable); the
// what-if (sim.UseWhatIf) refuses it, its dependency answering every
// attempt at once, with an error naming the scenario that applies it.
// What sim.Policy.Fields returns, which `unherd whatif --json` prints,
// is a policy file in this format.
//
// Durations are Go duration strings ("50ms", "2s", "1m30s": see
// time.ParseDuration). JSON files use the same names, with durations as
// strings. Unknown fields, duplicate fields, values of the wrong type and
// values out of range are errors.
//
// The format follows the file's extension (.yaml, .yml or .json); any
// other name is sniffed: a file whose first non-blank character is '{' is
// JSON, anything else YAML. Both formats are first read into one small
// tree that remembers each value's line, so every error, whether a syntax
// error or a bad value, is an [*Error] that names the file, the line and,
// where there is one, the field, in the form compilers use:
//
//	policy.yaml:4: cap: "2 seconds" is not a duration (want e.g. 2s)
//
// Every value is judged by one rule, sim.Policy.Validate (retry.New's own
// checks of the retry.Config the file fills in, the simulator's limit of
// sim.MaxPolicyAttempts, and the settings the simulator cannot model), or
// sim.Policy.ValidateFor a use, whose refusal names the file's field and
// line: a policy that parses is one the simulator accepts. The page of
// `unherd serve` reads its form through the same parser.
package policy
