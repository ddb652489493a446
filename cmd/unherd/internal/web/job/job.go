// Package job runs what the page of `unherd serve` asks for: a what-if
// analysis of a policy given by the policy file's own key names, or one
// scenario with its parameters. It is the part of the page that is Go: the
// WebAssembly build (package wasm beside it) hands each request from a Web
// Worker to [Do] and the answer back, so what the page shows is what the
// command line computes, from the same packages.
package job

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/unherd/unherd/cmd/unherd/internal/param"
	"github.com/unherd/unherd/cmd/unherd/internal/policy"
	"github.com/unherd/unherd/sim"
)

// Request is one run the page asks for.
type Request struct {
	// Kind is "whatif" (Policy judged beside the default), "parts" (the
	// parts of Policy's what-if that Runs names), "merge" (Policy's
	// what-if from its four Parts) or "scenario" (the scenario Name run
	// with Params). Workers make the parts of one what-if at once and one
	// of them merges them; the answer is the whole what-if's.
	Kind string `json:"kind"`
	// Runs, for "parts", names the parts to make, in order.
	Runs []Run `json:"runs,omitempty"`
	// Parts, for "merge", are the four parts of Policy's what-if made
	// with the same seed (sim.MergeWhatIf).
	Parts []*sim.WhatIfPart `json:"parts,omitempty"`
	// Policy holds the policy file's fields by their dotted names (name,
	// attempts, base, cap, jitter, budget, budget.ratio,
	// timeouts.attempt), each as it would be written in the file; an
	// empty or missing field takes the file's default. A "scenario"
	// request whose scenario runs a user's policy (Scenario.Policy) runs
	// this one beside its rows, when it holds any field.
	Policy map[string]string `json:"policy,omitempty"`
	// Name is the scenario to run (sim.Scenario.Name).
	Name string `json:"name,omitempty"`
	// Params holds scenario parameters by field name, as the command
	// line's flags read them; a missing one keeps its default.
	Params map[string]string `json:"params,omitempty"`
	// Quick runs the scenario at the report's sizes (sim.Params.Quick)
	// before Params apply.
	Quick bool `json:"quick,omitempty"`
	// Seed is the random seed, a whole number as --seed reads it; empty
	// means 1, the command line's default.
	Seed string `json:"seed,omitempty"`
}

// Run names a part of a what-if: a population, "closed" or "open", and
// whether the part is the default policy's (the same for every policy
// with the same seed) or the user's (sim.WhatIfRun).
type Run struct {
	Population string `json:"population"`
	Default    bool   `json:"default,omitempty"`
}

// Response is the answer to a Request.
type Response struct {
	// Parts are the parts a "parts" request made, in its order.
	Parts []*sim.WhatIfPart `json:"parts,omitempty"`
	// Result is, for a what-if, the JSON object that `unherd whatif --json
	// --seed N` prints for the same policy file; for a scenario, the one
	// `unherd sim NAME --json` prints.
	Result json.RawMessage `json:"result,omitempty"`
	// Charts are the charts of the results, in order (the JSON output
	// leaves them out).
	Charts []sim.Chart `json:"charts,omitempty"`
	// Columns are the tables' columns in display order, one list per
	// result (a what-if has the outage's and the storm's); the JSON of a
	// row, a map, has its keys sorted instead.
	Columns [][]string `json:"columns,omitempty"`
	// Error says what was wrong with the request; Field names the input
	// at fault (a policy key or a parameter name) when one is. A policy's
	// error is the policy file's without its file and line: the form's
	// field and what is wrong with it.
	Error string `json:"error,omitempty"`
	Field string `json:"field,omitempty"`
}

// PolicyKeys are the policy file's fields the page sets, in the file's
// order, by their dotted names.
var PolicyKeys = []string{"name", "attempts", "base", "cap", "jitter", "budget", "budget.ratio", "timeouts.attempt"}

// PolicyFile is the name the page's policy is parsed under, as if it were
// a file: its errors begin with it, and a policy without a name field is
// called "policy", as `unherd whatif --policy policy.json` calls it. The
// page writes JSON: the page's simulator is built without the YAML reader
// (see package policy).
const PolicyFile = "policy.json"

// Do runs req and returns the response as JSON. progress, if set, is
// called with the runs done and the total, serially. A malformed request
// or one that fails is answered with Error set, never with a Go error: the
// page shows it beside the input at fault.
func Do(ctx context.Context, req []byte, progress func(done, total int)) []byte {
	resp := do(ctx, req, progress)
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(Response{Error: fmt.Sprintf("encoding the answer: %v", err)})
	}
	return b
}

func do(ctx context.Context, data []byte, progress func(done, total int)) Response {
	var req Request
	if err := json.Unmarshal(data, &req); err != nil {
		return Response{Error: fmt.Sprintf("reading the request: %v", err)}
	}
	seed := uint64(1)
	if s := strings.TrimSpace(req.Seed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Response{Error: fmt.Sprintf("%q is not a seed: want a whole number from 0 to 18446744073709551615", req.Seed), Field: "seed"}
		}
		seed = n
	}
	o := sim.Options{Seed: seed, Progress: progress}
	switch req.Kind {
	case "whatif", "parts", "merge":
		p, err := ParsePolicyFor(req.Policy, sim.UseWhatIf)
		if err != nil {
			return policyError(err)
		}
		var rep *sim.WhatIfReport
		switch req.Kind {
		case "parts":
			return parts(ctx, p, o, req.Runs)
		case "merge":
			rep, err = sim.MergeWhatIf(p, req.Parts)
		default:
			rep, err = sim.WhatIf(ctx, p, o)
		}
		if err != nil {
			return Response{Error: fmt.Sprintf("whatif: %v", err)}
		}
		return answer(rep, rep.Results)
	case "scenario":
		return scenario(ctx, req, o)
	}
	return Response{Error: fmt.Sprintf("unknown kind of run %q (want whatif, parts, merge or scenario)", req.Kind)}
}

// parts makes the parts of p's what-if that runs names, in order; the
// progress counts over all of them.
func parts(ctx context.Context, p sim.Policy, o sim.Options, runs []Run) Response {
	if len(runs) == 0 {
		return Response{Error: "parts: no runs named: want one or more of the what-if's four parts"}
	}
	progress := o.Progress
	var resp Response
	for i, r := range runs {
		if progress != nil {
			o.Progress = func(done, total int) { progress(i*total+done, len(runs)*total) }
		}
		part, err := sim.WhatIfRun(ctx, p, o, r.Population, r.Default)
		if err != nil {
			return Response{Error: fmt.Sprintf("whatif: %v", err)}
		}
		resp.Parts = append(resp.Parts, part)
	}
	return resp
}

// answer is the response carrying v as the result and the charts of rs.
func answer(v any, rs []*sim.Result) Response {
	b, err := json.Marshal(v)
	if err != nil {
		return Response{Error: fmt.Sprintf("encoding the result: %v", err)}
	}
	resp := Response{Result: b}
	for _, r := range rs {
		resp.Charts = append(resp.Charts, r.Charts...)
		resp.Columns = append(resp.Columns, r.Columns)
	}
	return resp
}

// finite reports whether the JSON number v fits a float64: a number such
// as 1e700, valid JSON that no float64 holds, stays the string the form
// held, for the policy's parser to refuse by its field.
func finite(v string) bool {
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// scalar writes a form's value v as the JSON value a policy file would
// hold if a user wrote v unquoted in YAML, for the common cases: a
// number as a number (5, -1, 0.2, .5, +3, 1e3), true and false as
// booleans, null and ~ as null, anything else as a string (50ms, full,
// five). So a field the
// simulator reads as a number and a field it reads as a duration are
// typed as in a file, and the page refuses -1 attempts as a file does.
func scalar(v string) string {
	switch v {
	case "true", "True", "TRUE":
		return "true"
	case "false", "False", "FALSE":
		return "false"
	case "null", "Null", "NULL", "~":
		return "null"
	}
	if n, ok := yamlNumber(v); ok && finite(n) {
		return n
	}
	q, _ := json.Marshal(v)
	return string(q)
}

// yamlNumber reports whether v is a decimal number as YAML writes one
// (a sign, digits with a point anywhere among them, an exponent) and
// returns it in JSON's form: no plus sign, no leading zeros, a digit on
// each side of the point. (A scanner, not a regexp: this package runs in the page's
// workers, where the regexp package would slow every start.)
func yamlNumber(v string) (string, bool) {
	digits := func(s string) int {
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i
	}
	s, sign := v, ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = "-"
		}
		s = s[1:]
	}
	n := digits(s)
	intPart, rest := s[:n], s[n:]
	frac, hasPoint := "", false
	if rest != "" && rest[0] == '.' {
		hasPoint = true
		m := digits(rest[1:])
		frac, rest = rest[1:1+m], rest[1+m:]
	}
	if intPart == "" && frac == "" {
		return "", false
	}
	exp := ""
	if rest != "" && (rest[0] == 'e' || rest[0] == 'E') {
		e := rest[1:]
		esign := ""
		if e != "" && (e[0] == '+' || e[0] == '-') {
			esign, e = e[:1], e[1:]
		}
		m := digits(e)
		if m == 0 {
			return "", false
		}
		exp, rest = "e"+esign+e[:m], e[m:]
	}
	if rest != "" {
		return "", false
	}
	// JSON allows no leading zeros; the file's reader takes 05 for 5.
	intPart = cmp.Or(strings.TrimLeft(intPart, "0"), "0")
	out := sign + intPart
	if hasPoint {
		out += "." + cmp.Or(frac, "0")
	}
	return out + exp, true
}

// PolicyJSON writes fields (by their dotted names, see [PolicyKeys]) as
// the policy file a user would write, in JSON, leaving out empty ones ({}
// when all are): one field to a line, in the order of PolicyKeys, so that
// an error's line names its field. A field that is not one of PolicyKeys
// is an error naming it.
func PolicyJSON(fields map[string]string) ([]byte, error) {
	for k := range fields {
		if !isPolicyKey(k) {
			return nil, &policy.Error{File: PolicyFile, Line: 1, Field: k, Msg: "unknown field (want one of " + strings.Join(PolicyKeys, ", ") + ")"}
		}
	}
	var lines []string
	get := func(k string) string { return strings.TrimSpace(fields[k]) }
	for _, k := range []string{"name", "attempts", "base", "cap", "jitter"} {
		if v := get(k); v != "" {
			val := scalar(v)
			if k == "name" && val != "null" {
				// A label: its text as typed (+3 stays +3), as a file's
				// reader takes a bare name.
				q, _ := json.Marshal(v)
				val = string(q)
			}
			lines = append(lines, fmt.Sprintf("%q: %s", k, val))
		}
	}
	switch kind, ratio := get("budget"), get("budget.ratio"); {
	case ratio != "" && kind == "":
		// A share alone: the parser reads it as the ratio budget, in a
		// file as here.
		lines = append(lines, fmt.Sprintf("\"budget\": {\n  \"ratio\": %s\n}", scalar(ratio)))
	case ratio != "":
		lines = append(lines, fmt.Sprintf("\"budget\": {\n  \"kind\": %s,\n  \"ratio\": %s\n}", scalar(kind), scalar(ratio)))
	case kind != "":
		lines = append(lines, fmt.Sprintf("\"budget\": %s", scalar(kind)))
	}
	if v := get("timeouts.attempt"); v != "" {
		lines = append(lines, fmt.Sprintf("\"timeouts\": {\n  \"attempt\": %s\n}", scalar(v)))
	}
	if len(lines) == 0 {
		// Every field at its default: an empty object, since an empty
		// file is an error.
		return []byte("{}\n"), nil
	}
	return []byte("{\n" + strings.Join(lines, ",\n") + "\n}\n"), nil
}

func isPolicyKey(k string) bool {
	for _, p := range PolicyKeys {
		if k == p {
			return true
		}
	}
	return false
}

// ParsePolicy reads fields as the command line reads a policy file named
// [PolicyFile] holding them (see [PolicyJSON]); its errors are those of
// policy.Parse.
func ParsePolicy(fields map[string]string) (sim.Policy, error) {
	return ParsePolicyFor(fields, "")
}

// ParsePolicyFor is [ParsePolicy] for a use of the policy, as
// policy.ParseFor reads a file for it: sim.UseWhatIf for `unherd whatif`,
// sim.UseMetastable for `unherd sim metastable --policy`.
func ParsePolicyFor(fields map[string]string, use string) (sim.Policy, error) {
	doc, err := PolicyJSON(fields)
	if err != nil {
		return sim.Policy{}, err
	}
	return policy.ParseFor(PolicyFile, doc, use)
}

// policyError answers a policy the parser refused, by its form field:
// the message is the file's without the file and line, which the user
// of the page never wrote ("jitter: unknown jitter ..."), and Field is
// the form field at fault (budget.kind is the budget field's).
func policyError(err error) Response {
	var pe *policy.Error
	if !errors.As(err, &pe) {
		return Response{Error: err.Error()}
	}
	field := pe.Field
	if field == "budget.kind" {
		field = "budget"
	}
	if field == "" {
		return Response{Error: "policy: " + pe.Msg}
	}
	return Response{Error: field + ": " + pe.Msg, Field: field}
}

// Scenario describes a scenario for the page's form.
type Scenario struct {
	Name       string  `json:"name"`
	Describe   string  `json:"describe"`
	Population string  `json:"population"`
	Fields     []Field `json:"fields"`
	// Policy is set for a scenario that runs the page's policy as a row
	// of its own (sim.PolicyParams), as `unherd sim NAME --policy FILE`
	// does: the page sends it with the scenario's parameters.
	Policy bool `json:"policy,omitempty"`
}

// Field is one parameter of a scenario, with its default as text.
type Field struct {
	Name    string `json:"name"`
	Usage   string `json:"usage"`
	Default string `json:"default"`
	// Kind is "int", "float", "duration" or "ints".
	Kind string `json:"kind"`
}

// Scenarios lists the scenarios and their parameters at the sizes the
// page runs them at by default (the report's, sim.Params.Quick), as JSON.
func Scenarios() []byte {
	var out []Scenario
	for _, s := range sim.Scenarios() {
		p := s.Params()
		p.Quick()
		_, takes := p.(sim.PolicyParams)
		sc := Scenario{Name: s.Name(), Describe: s.Describe(), Population: s.Population(), Policy: takes}
		for _, f := range p.Fields() {
			sc.Fields = append(sc.Fields, Field{Name: f.Name, Usage: f.Usage, Default: param.Text(f), Kind: param.Kind(f)})
		}
		out = append(out, sc)
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return b
}

func scenario(ctx context.Context, req Request, o sim.Options) Response {
	// Any scenario the command line runs by name (sim.Scenarios).
	sc, ok := sim.Lookup(req.Name)
	if !ok {
		return Response{Error: fmt.Sprintf("unknown scenario %q", req.Name)}
	}
	p := sc.Params()
	if req.Quick {
		p.Quick()
	}
	fields := map[string]sim.Field{}
	for _, f := range p.Fields() {
		fields[f.Name] = f
	}
	for name, text := range req.Params {
		f, ok := fields[name]
		if !ok {
			return Response{Error: fmt.Sprintf("%s has no parameter %q", sc.Name(), name), Field: name}
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if err := param.Set(f, text); err != nil {
			return Response{Error: fmt.Sprintf("%s: %v", name, err), Field: name}
		}
	}
	if err := p.Validate(); err != nil {
		return Response{Error: err.Error()}
	}
	if pp, ok := p.(sim.PolicyParams); ok && len(req.Policy) > 0 {
		pol, err := ParsePolicyFor(req.Policy, sc.Name())
		if err != nil {
			return policyError(err)
		}
		if err := pp.SetPolicy(pol); err != nil {
			return Response{Error: err.Error()}
		}
	}
	r, err := sc.Run(ctx, p, o)
	if err != nil {
		return Response{Error: fmt.Sprintf("%s: %v", sc.Name(), err)}
	}
	return answer(r, []*sim.Result{r})
}
