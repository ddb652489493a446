package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxNodes bounds the values in a policy file once YAML aliases are
// expanded: a chain of aliases can stand for exponentially many values.
const maxNodes = 10000

// maxDepth bounds nesting in a policy file. The schema is two levels deep;
// the bound keeps a hostile file from exhausting the stack.
const maxDepth = 32

type kind uint8

const (
	scalar kind = iota
	mapping
	sequence
)

// scalarType is what a scalar is, as its format says: JSON by syntax,
// YAML by its resolved tag.
type scalarType uint8

const (
	str scalarType = iota
	number
	boolean
	null
)

// node is one value of a policy file, from either format, with the line
// it starts on.
type node struct {
	line  int
	kind  kind
	typ   scalarType // scalars only
	text  string     // scalars only
	pairs []pair     // mappings only, in file order
}

// pair is one key and its value in a mapping.
type pair struct {
	key  string
	line int
	val  *node
}

// describe names a node's type for error messages.
func (n *node) describe() string {
	switch n.kind {
	case mapping:
		return "a mapping"
	case sequence:
		return "a list"
	}
	switch n.typ {
	case number:
		return "the number " + n.text
	case boolean:
		return "the boolean " + n.text
	case null:
		return "no value"
	}
	if t := []rune(n.text); len(t) > 40 {
		return strconv.Quote(string(t[:40])) + "..."
	}
	return strconv.Quote(n.text)
}

// syntaxError is a parse error at a line, before any field is known.
func syntaxError(line int, format string, args ...any) *Error {
	return &Error{Line: max(line, 1), Msg: fmt.Sprintf(format, args...)}
}

// lineAt returns the 1-based line holding byte offset off of data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// checkText reports invalid UTF-8 and control characters with their line.
// The YAML parser rejects both, but without saying where.
func checkText(data []byte) *Error {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return syntaxError(line, "invalid UTF-8")
		case r == '\n':
			line++
		case r < 0x20 && r != '\t' && r != '\r', r == 0x7f:
			return syntaxError(line, "control character %U is not allowed", r)
		}
		i += size
	}
	return nil
}

// isJSON reports whether a file should be read as JSON: by extension, or
// by a leading '{' when the extension says nothing.
func isJSON(ext string, data []byte) bool {
	switch ext {
	case ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// fromJSON parses data as one JSON value into a tree, reading tokens so
// that every value's line is known. An empty file gives a nil node.
func fromJSON(data []byte) (*node, *Error) {
	if err := checkText(data); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	d := &jsonReader{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	n, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if _, terr := d.dec.Token(); terr != io.EOF {
		if terr != nil {
			return nil, d.tokenError(terr)
		}
		return nil, syntaxError(lineAt(data, d.dec.InputOffset()), "unexpected data after the policy object")
	}
	return n, nil
}

type jsonReader struct {
	data []byte
	dec  *json.Decoder
	// off and line cache the last offset located, so that locating every
	// token in order costs one pass over the data.
	off  int64
	line int
}

// lineAt is the package's lineAt, counting on from the last call when
// off has not moved backwards.
func (d *jsonReader) lineAt(off int64) int {
	off = min(max(off, 0), int64(len(d.data)))
	if off < d.off || d.line == 0 {
		d.off, d.line = 0, 1
	}
	d.line += bytes.Count(d.data[d.off:off], []byte{'\n'})
	d.off = off
	return d.line
}

// next reads one token and the line it starts on.
func (d *jsonReader) next() (json.Token, int, *Error) {
	start := d.skip(d.dec.InputOffset())
	t, err := d.dec.Token()
	if err != nil {
		return nil, 0, d.tokenError(err)
	}
	return t, d.lineAt(start), nil
}

// skip returns the offset of the next token at or after off, passing the
// blanks and separators the decoder has not consumed yet.
func (d *jsonReader) skip(off int64) int64 {
	for off < int64(len(d.data)) {
		switch d.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (d *jsonReader) tokenError(err error) *Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return syntaxError(lineAt(d.data, se.Offset), "%s", trimPrefix(se.Error(), "json: "))
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return syntaxError(lineAt(d.data, int64(len(d.data))), "unexpected end of JSON input")
	}
	return syntaxError(lineAt(d.data, d.dec.InputOffset()), "%s", trimPrefix(err.Error(), "json: "))
}

func (d *jsonReader) value(depth int) (*node, *Error) {
	t, line, err := d.next()
	if err != nil {
		return nil, err
	}
	if depth > maxDepth {
		return nil, syntaxError(line, "nested more than %d levels deep", maxDepth)
	}
	n := &node{line: line}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = mapping
			for d.dec.More() {
				kt, kline, err := d.next()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string) // the decoder allows only strings here
				val, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.pairs = append(n.pairs, pair{key: key, line: kline, val: val})
			}
		case '[':
			n.kind = sequence
			for d.dec.More() {
				if _, err := d.value(depth + 1); err != nil {
					return nil, err
				}
			}
		default:
			return nil, syntaxError(line, "unexpected %q", rune(t))
		}
		if _, _, err := d.next(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.text = t
	case json.Number:
		n.typ, n.text = number, t.String()
	case bool:
		n.typ, n.text = boolean, strconv.FormatBool(t)
	case nil:
		n.typ, n.text = null, "null"
	}
	return n, nil
}
