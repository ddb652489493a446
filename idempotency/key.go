package idempotency

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxKeyLength is the longest key accepted, in bytes (Stripe's limit; the
// draft sets none).
const MaxKeyLength = 255

// ErrMalformedKey is wrapped by every error ParseKey returns.
var ErrMalformedKey = errors.New("idempotency: malformed Idempotency-Key")

// ParseKey parses the value of an Idempotency-Key header field. The
// draft makes it an Item Structured Field (RFC 9651) whose value is a
// String: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`. Parameters, which the
// draft does not define, are parsed and ignored, as RFC 9651 requires of
// unknown parameters.
//
// With bare true, a value that does not start with a double quote is also
// accepted as it stands when it is 1 to MaxKeyLength visible ASCII
// characters with no space, double quote, comma, semicolon or backslash:
// the form Stripe's clients, and unherdhttp's Transport, send.
//
// The key must be 1 to MaxKeyLength bytes long. Every error wraps
// ErrMalformedKey.
func ParseKey(v string, bare bool) (string, error) {
	p := sfParser{s: v}
	p.skipSP()
	if p.eof() {
		return "", fmt.Errorf("%w: empty", ErrMalformedKey)
	}
	if p.peek() != '"' {
		if bare {
			return parseBare(v)
		}
		return "", fmt.Errorf("%w: not a String (a value in double quotes)", ErrMalformedKey)
	}
	key, err := p.str()
	if err != nil {
		return "", err
	}
	if err := p.params(); err != nil {
		return "", err
	}
	p.skipSP()
	if !p.eof() {
		return "", fmt.Errorf("%w: unexpected %q after the String (several header lines or a list?)", ErrMalformedKey, p.s[p.i:])
	}
	return checkLength(key)
}

func checkLength(key string) (string, error) {
	switch {
	case key == "":
		return "", fmt.Errorf("%w: empty key", ErrMalformedKey)
	case len(key) > MaxKeyLength:
		return "", fmt.Errorf("%w: key of %d bytes is longer than %d", ErrMalformedKey, len(key), MaxKeyLength)
	}
	return key, nil
}

// parseBare accepts v, trimmed of spaces, as a key of visible ASCII
// characters other than the ones that would make it ambiguous as a
// structured field.
func parseBare(v string) (string, error) {
	i, j := 0, len(v)
	for i < j && v[i] == ' ' {
		i++
	}
	for j > i && v[j-1] == ' ' {
		j--
	}
	v = v[i:j]
	for k := 0; k < len(v); k++ {
		c := v[k]
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return "", fmt.Errorf("%w: byte %#x at %d of a bare key", ErrMalformedKey, c, k)
		}
	}
	return checkLength(v)
}

// sfParser parses the parts of RFC 9651 (section 4.2) an Item needs.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) eof() bool  { return p.i >= len(p.s) }
func (p *sfParser) peek() byte { return p.s[p.i] }

func (p *sfParser) skipSP() {
	for !p.eof() && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at %d: %s", ErrMalformedKey, p.i, fmt.Sprintf(format, args...))
}

// str parses an sf-string (section 4.2.5); p.peek() is '"'.
func (p *sfParser) str() (string, error) {
	p.i++
	start := p.i
	// The common case, no escapes, returns a substring without copying.
	for ; !p.eof(); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, nil
		case c == '\\':
			return p.strEscaped(start)
		case c < 0x20 || c > 0x7e:
			return "", p.errorf("byte %#x in a String", c)
		}
	}
	return "", p.errorf("unterminated String")
}

func (p *sfParser) strEscaped(start int) (string, error) {
	b := []byte(p.s[start:p.i])
	for ; !p.eof(); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return string(b), nil
		case c == '\\':
			p.i++
			if p.eof() {
				return "", p.errorf("unterminated escape")
			}
			if e := p.s[p.i]; e == '"' || e == '\\' {
				b = append(b, e)
			} else {
				return "", p.errorf("escape of %q", e)
			}
		case c < 0x20 || c > 0x7e:
			return "", p.errorf("byte %#x in a String", c)
		default:
			b = append(b, c)
		}
	}
	return "", p.errorf("unterminated String")
}

// params parses and discards parameters (section 4.2.3.2).
func (p *sfParser) params() error {
	for !p.eof() && p.peek() == ';' {
		p.i++
		p.skipSP()
		if err := p.key(); err != nil {
			return err
		}
		if !p.eof() && p.peek() == '=' {
			p.i++
			if err := p.bareItem(); err != nil {
				return err
			}
		}
	}
	return nil
}

// key parses a parameter key (section 4.2.3.3).
func (p *sfParser) key() error {
	if p.eof() || !(isLCAlpha(p.peek()) || p.peek() == '*') {
		return p.errorf("parameter key must start with a-z or *")
	}
	for p.i++; !p.eof(); p.i++ {
		c := p.peek()
		if !(isLCAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
	}
	return nil
}

// bareItem parses and discards a parameter's value (section 4.2.3.1).
func (p *sfParser) bareItem() error {
	if p.eof() {
		return p.errorf("missing parameter value")
	}
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		_, err := p.str()
		return err
	case c == '*' || isAlpha(c):
		for p.i++; !p.eof() && (isTChar(p.peek()) || p.peek() == ':' || p.peek() == '/'); p.i++ {
		}
		return nil
	case c == ':':
		return p.bytes()
	case c == '?':
		p.i++
		if p.eof() || (p.peek() != '0' && p.peek() != '1') {
			return p.errorf("boolean must be ?0 or ?1")
		}
		p.i++
		return nil
	case c == '@':
		p.i++
		if p.eof() || !(p.peek() == '-' || isDigit(p.peek())) {
			return p.errorf("date must be @ and an integer")
		}
		start := p.i
		if err := p.number(); err != nil {
			return err
		}
		for _, d := range p.s[start:p.i] {
			if d == '.' {
				return p.errorf("date must be an integer")
			}
		}
		return nil
	case c == '%':
		return p.displayString()
	default:
		return p.errorf("unexpected %q in a parameter value", c)
	}
}

// number parses an sf-integer or sf-decimal (section 4.2.4).
func (p *sfParser) number() error {
	if p.peek() == '-' {
		p.i++
	}
	if p.eof() || !isDigit(p.peek()) {
		return p.errorf("number without digits")
	}
	digits, frac, dot := 0, 0, false
	for ; !p.eof(); p.i++ {
		c := p.peek()
		if c == '.' && !dot {
			if digits > 12 {
				return p.errorf("decimal with more than 12 integer digits")
			}
			dot = true
			continue
		}
		if !isDigit(c) {
			break
		}
		if dot {
			frac++
		} else {
			digits++
		}
	}
	switch {
	case !dot && digits > 15:
		return p.errorf("integer with more than 15 digits")
	case dot && (frac == 0 || frac > 3):
		return p.errorf("decimal needs 1 to 3 fractional digits")
	}
	return nil
}

// bytes parses an sf-binary (section 4.2.7).
func (p *sfParser) bytes() error {
	for p.i++; !p.eof(); p.i++ {
		c := p.peek()
		if c == ':' {
			p.i++
			return nil
		}
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			return p.errorf("byte %#x in a Byte Sequence", c)
		}
	}
	return p.errorf("unterminated Byte Sequence")
}

// displayString parses an sf-displaystring (section 4.2.10), checking
// its percent-encoding but not the UTF-8 it encodes.
func (p *sfParser) displayString() error {
	p.i++
	if p.eof() || p.peek() != '"' {
		return p.errorf("display string must start with %%\"")
	}
	for p.i++; !p.eof(); p.i++ {
		c := p.peek()
		switch {
		case c == '"':
			p.i++
			return nil
		case c == '%':
			if p.i+2 >= len(p.s) || !isLCHex(p.s[p.i+1]) || !isLCHex(p.s[p.i+2]) {
				return p.errorf("bad percent-encoding")
			}
			p.i += 2
		case c < 0x20 || c > 0x7e:
			return p.errorf("byte %#x in a display string", c)
		}
	}
	return p.errorf("unterminated display string")
}

func isLCAlpha(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool   { return '0' <= c && c <= '9' }
func isLCHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' }

// isTChar reports an RFC 9110 tchar.
func isTChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// StoreKey returns the key a record is stored under: the client's key in
// a namespace of its caller. With scoped false (no principal configured)
// the namespace is the one shared by every unscoped caller; with scoped
// true it is the principal's own, the principal's length written before
// it, so that no choice of principal and key, scoped or not, names
// another caller's record: "u" and the key, or "p", the principal's
// length in decimal, ":", the principal and the key. The HTTP middleware
// and unherdgrpc's server interceptor both store under it, so a store
// they share keeps every caller apart; a Store that needs a key of its
// own form hashes this one.
func StoreKey(principal string, scoped bool, key string) string {
	if !scoped {
		return "u" + key
	}
	return "p" + strconv.Itoa(len(principal)) + ":" + principal + key
}
