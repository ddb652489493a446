package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unherd/unherd/backoff"
	"github.com/unherd/unherd/sim"
)

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("policy: invalid policy file")

// Error is a problem in a policy file, located by line and, once the
// value is known, by field.
type Error struct {
	// File is the file's name as given to Parse.
	File string
	// Line is the 1-based line of the problem; always set.
	Line int
	// Field is the dotted path of the field at fault ("cap",
	// "budget.ratio"), or empty for a syntax error.
	Field string
	// Msg says what is wrong and, where it helps, what would be right.
	Msg string
}

// Error formats the problem as file:line: field: message.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	b.WriteString(strconv.Itoa(e.Line))
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// Parse reads a policy file's contents. name is the file's name: it
// chooses the format by extension, prefixes every error, and its base name
// without extension is the policy's default Name. Every error is an
// [*Error] wrapping [ErrInvalid]. A policy that parses is one
// sim.Policy.Validate accepts; [ParseFor] judges it for a use too.
func Parse(name string, data []byte) (sim.Policy, error) {
	return ParseFor(name, data, "")
}

// ParseFor is [Parse] for a use of the policy, sim.UseWhatIf or
// sim.UseMetastable (empty: none), whose refusals
// (sim.Policy.ValidateFor) name the file's field and line as every other
// error does: the what-if refuses timeouts.attempt, which only the
// metastable scenario applies.
func ParseFor(name string, data []byte, use string) (sim.Policy, error) {
	ext := strings.ToLower(filepath.Ext(name))
	var (
		root *node
		err  *Error
	)
	if isJSON(ext, data) {
		root, err = fromJSON(data)
	} else {
		root, err = fromYAML(data)
	}
	if err == nil {
		var p sim.Policy
		p, err = decode(root, strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)), use)
		if err == nil {
			return p, nil
		}
	}
	err.File = name
	return sim.Policy{}, err
}

// fields lists the top-level fields, in the order the doc gives them.
var fields = []string{"name", "attempts", "base", "cap", "jitter", "budget", "timeouts"}

func decode(root *node, defaultName, use string) (sim.Policy, *Error) {
	p := sim.Policy{Name: defaultName}
	if root == nil {
		return p, syntaxError(1, "the file is empty; want a mapping with some of: %s", strings.Join(fields, ", "))
	}
	if root.kind != mapping {
		return p, syntaxError(root.line, "want a mapping with some of: %s; got %s", strings.Join(fields, ", "), root.describe())
	}
	set, err := byKey(root, "", fields)
	if err != nil {
		return p, err
	}
	if n := set["name"]; n != nil {
		// A name is a label: a bare number or boolean (name: 2024) is
		// its text, as the page's form gives it.
		if n.kind != scalar || n.typ == null {
			return p, fieldError(n, "name", "want a string, got %s", n.describe())
		}
		p.Name = n.text
		if strings.TrimSpace(p.Name) == "" {
			return p, fieldError(n, "name", "is empty")
		}
	}
	if n := set["attempts"]; n != nil {
		if p.Retry.MaxAttempts, err = attempts(n); err != nil {
			return p, err
		}
	}
	if n := set["base"]; n != nil {
		if p.Retry.Backoff.Base, err = duration(n, "base", "50ms"); err != nil {
			return p, err
		}
	}
	if n := set["cap"]; n != nil {
		if p.Retry.Backoff.Cap, err = duration(n, "cap", "2s"); err != nil {
			return p, err
		}
	}
	if n := set["jitter"]; n != nil {
		if p.Retry.Backoff.Jitter, err = jitter(n); err != nil {
			return p, err
		}
	}
	if n := set["budget"]; n != nil {
		if p.Budget, p.BudgetRatio, err = budgetOf(n); err != nil {
			return p, err
		}
	}
	if n := set["timeouts"]; n != nil {
		if p.Retry.AttemptTimeout, err = timeouts(n); err != nil {
			return p, err
		}
	}
	return p, validate(p, root, set, use)
}

// validate checks the policy as the simulator will run it
// (sim.Policy.Validate, or ValidateFor the use if one is named: the one
// rule for every value) and names the file's field, and its line, of a
// setting it refuses.
func validate(p sim.Policy, root *node, set map[string]*node, use string) *Error {
	err := p.Validate()
	if use != "" {
		err = p.ValidateFor(use)
	}
	if err == nil {
		return nil
	}
	var pe *sim.ParamError
	if !errors.As(err, &pe) {
		return syntaxError(root.line, "%v", err)
	}
	// fields are the file's names of the Policy's settings, the first set
	// in the file taken: a bad schedule is most likely its cap's fault.
	fields := map[string][]string{
		"Retry.MaxAttempts":    {"attempts"},
		"Retry.AttemptTimeout": {"timeouts.attempt"},
		"Retry.Backoff":        {"cap", "base", "jitter"},
		"Retry.Backoff.Base":   {"base", "cap"},
		"Retry.Backoff.Cap":    {"cap", "base"},
		"Budget":               {"budget"},
		"BudgetRatio":          {"budget.ratio"},
	}
	for _, f := range fields[pe.Field] {
		if n := lookup(set, f); n != nil {
			return fieldError(n, f, "%s", pe.Msg)
		}
	}
	return syntaxError(root.line, "%s: %s", pe.Field, pe.Msg)
}

// lookup finds a dotted field's node below the top-level fields set.
func lookup(set map[string]*node, field string) *node {
	top, rest, nested := strings.Cut(field, ".")
	n := set[top]
	for nested && n != nil {
		var key string
		key, rest, nested = strings.Cut(rest, ".")
		var next *node
		if n.kind == mapping {
			for _, kv := range n.pairs {
				if kv.key == key {
					next = kv.val
				}
			}
		}
		n = next
	}
	return n
}

// byKey indexes a mapping's values by key, rejecting unknown and
// duplicate keys. prefix is the mapping's own dotted path.
func byKey(m *node, prefix string, known []string) (map[string]*node, *Error) {
	set := make(map[string]*node, len(m.pairs))
	for _, kv := range m.pairs {
		path := prefix + kv.key
		if !slices.Contains(known, kv.key) {
			return nil, &Error{Line: kv.line, Field: path, Msg: "unknown field (known: " + strings.Join(known, ", ") + ")"}
		}
		if set[kv.key] != nil {
			return nil, &Error{Line: kv.line, Field: path, Msg: fmt.Sprintf("set twice (first on line %d)", set[kv.key].line)}
		}
		set[kv.key] = kv.val
	}
	return set, nil
}

func fieldError(n *node, field, format string, args ...any) *Error {
	return &Error{Line: n.line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// text returns a string scalar's value.
func text(n *node, field string) (string, *Error) {
	if n.kind != scalar || n.typ != str {
		return "", fieldError(n, field, "want a string, got %s", n.describe())
	}
	return n.text, nil
}

// attempts reads a whole number; sim.Policy.Validate judges its range.
func attempts(n *node) (int, *Error) {
	if n.kind != scalar || n.typ != number {
		return 0, fieldError(n, "attempts", "want a whole number from 1 to %d (0 for the default, 3), got %s", sim.MaxPolicyAttempts, n.describe())
	}
	v, err := strconv.ParseInt(n.text, 10, 32)
	if err != nil {
		return 0, fieldError(n, "attempts", "%s is not a whole number from 1 to %d (it counts the first attempt: 3 means 2 retries; 0 is the default, 3)", n.text, sim.MaxPolicyAttempts)
	}
	return int(v), nil
}

// duration reads a positive Go duration string; example is a sensible
// value for the field, shown when the value is not a duration.
func duration(n *node, field, example string) (time.Duration, *Error) {
	if n.kind != scalar || n.typ != str {
		return 0, fieldError(n, field, "%s is not a duration (want e.g. %s)", n.describe(), example)
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.text))
	if err != nil {
		return 0, fieldError(n, field, "%s is not a duration (want e.g. %s)", n.describe(), example)
	}
	if d <= 0 {
		return 0, fieldError(n, field, "%s must be positive (want e.g. %s; omit the field for the default)", d, example)
	}
	return d, nil
}

func jitter(n *node) (backoff.Jitter, *Error) {
	const want = "want none, full, equal or decorrelated"
	s, err := text(n, "jitter")
	if err != nil {
		err.Msg = want + "; got " + n.describe()
		return 0, err
	}
	j, perr := backoff.ParseJitter(strings.ToLower(strings.TrimSpace(s)))
	if perr != nil {
		return 0, fieldError(n, "jitter", "unknown jitter %s (%s)", n.describe(), want)
	}
	return j, nil
}

// budgetKinds are the budgets sim.Policy accepts.
var budgetKinds = []string{"none", "token", "ratio"}

// budgetOf reads a budget given as a kind ("token") or as a mapping with
// kind and ratio; a mapping with a ratio and no kind is the ratio budget.
func budgetOf(n *node) (kind string, ratio float64, e *Error) {
	if n.kind == scalar {
		kind, err := budgetKind(n, "budget")
		return kind, 0, err
	}
	if n.kind != mapping {
		return "", 0, fieldError(n, "budget", "want one of %s, or a mapping with kind and ratio; got %s", strings.Join(budgetKinds, ", "), n.describe())
	}
	set, err := byKey(n, "budget.", []string{"kind", "ratio"})
	if err != nil {
		return "", 0, err
	}
	k, r := set["kind"], set["ratio"]
	switch {
	case k != nil:
		if kind, err = budgetKind(k, "budget.kind"); err != nil {
			return "", 0, err
		}
	case r != nil:
		kind = "ratio" // a share is only the ratio budget's
	default:
		return "", 0, fieldError(n, "budget.kind", "missing (want one of %s, or a ratio alone for the ratio budget)", strings.Join(budgetKinds, ", "))
	}
	if r != nil {
		if kind != "ratio" {
			return "", 0, fieldError(r, "budget.ratio", "applies only to kind ratio, not %s", kind)
		}
		if ratio, err = share(r); err != nil {
			return "", 0, err
		}
	}
	return kind, ratio, nil
}

func budgetKind(n *node, field string) (string, *Error) {
	s, err := text(n, field)
	if err == nil && !slices.Contains(budgetKinds, s) {
		err = fieldError(n, field, "")
	}
	if err != nil {
		err.Msg = fmt.Sprintf("want one of %s; got %s", strings.Join(budgetKinds, ", "), n.describe())
	}
	return s, err
}

// share reads the ratio budget's share: a number in (0, 1].
func share(n *node) (float64, *Error) {
	const want = "want a share of requests above 0 and at most 1, e.g. 0.1"
	if n.kind != scalar || n.typ != number {
		return 0, fieldError(n, "budget.ratio", "%s; got %s", want, n.describe())
	}
	// A decimal number only: YAML's 0_1 and 0x1p-3 are numbers too, and
	// ParseFloat reads them, but no one writes a share so.
	v, err := strconv.ParseFloat(n.text, 64)
	if strings.ContainsAny(n.text, "_xXpP") || err != nil || !(v > 0 && v <= 1) {
		return 0, fieldError(n, "budget.ratio", "%s; got %s", want, n.text)
	}
	return v, nil
}

func timeouts(n *node) (time.Duration, *Error) {
	if n.kind != mapping {
		return 0, fieldError(n, "timeouts", "want a mapping such as {attempt: 500ms}; got %s", n.describe())
	}
	set, err := byKey(n, "timeouts.", []string{"attempt"})
	if err != nil {
		return 0, err
	}
	if a := set["attempt"]; a != nil {
		return duration(a, "timeouts.attempt", "500ms")
	}
	return 0, nil
}
