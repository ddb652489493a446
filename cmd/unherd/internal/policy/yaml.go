//go:build !js

package policy

import (
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The YAML reader is left out of the page's simulator (GOOS=js): the page
// hands its policy over as JSON, and the YAML package compiles regexps
// and builds unicode's tables when a process starts, in every worker.

// yamlLine finds the "line N:" the YAML parser puts in its messages.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the YAML parser's (not scanner's) messages: they
// carry a 0-based line, the start of the construct they were parsing.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// fromYAML parses data as YAML into a tree. An empty document gives a nil
// node.
func fromYAML(data []byte) (*node, *Error) {
	if err := checkText(data); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		msg = trimPrefix(msg, "yaml: ")
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		// The scanner's lines count from 1; the parser's from 0, and it
		// leaves out line 0 altogether.
		if parserProblems[msg] || line == 0 {
			line++
		}
		return nil, syntaxError(line, "%s", msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	c := &yamlConverter{}
	return c.convert(doc.Content[0], 0)
}

// yamlConverter turns a yaml.Node tree into a node tree, counting values
// as it goes.
type yamlConverter struct{ nodes int }

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*node, *Error) {
	if c.nodes++; c.nodes > maxNodes {
		return nil, syntaxError(y.Line, "more than %d values (after expanding aliases)", maxNodes)
	}
	if depth > maxDepth {
		return nil, syntaxError(y.Line, "nested more than %d levels deep", maxDepth)
	}
	if y.Kind == yaml.AliasNode {
		if y.Alias == nil {
			return nil, syntaxError(y.Line, "unknown alias")
		}
		n, err := c.convert(y.Alias, depth+1)
		if n != nil {
			c := *n
			c.line = y.Line // report the use, not the anchor
			n = &c
		}
		return n, err
	}
	n := &node{line: max(y.Line, 1)}
	switch y.Kind {
	case yaml.MappingNode:
		n.kind = mapping
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, syntaxError(k.Line, "a key must be a plain name")
			}
			val, err := c.convert(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.pairs = append(n.pairs, pair{key: k.Value, line: max(k.Line, 1), val: val})
		}
	case yaml.SequenceNode:
		n.kind = sequence
	case yaml.ScalarNode:
		n.text = y.Value
		switch y.ShortTag() {
		case "!!int", "!!float":
			n.typ = number
		case "!!bool":
			n.typ = boolean
		case "!!null":
			n.typ = null
		}
	default:
		return nil, syntaxError(y.Line, "unexpected YAML node")
	}
	return n, nil
}
