package unherdhttp

import (
	"net/http"
	"strings"

	"github.com/unherd/unherd/retry/engine"
)

// ErrInvalidRequest is matched (errors.Is) by the error of a request that
// net/http refuses to send: a nil URL or Header, an invalid method, header
// or trailer, no host, or, through a base that is an *http.Transport, a
// scheme other than http and https. Such a request is the caller's bug,
// not a failure of the server: it is never retried, costs the retry budget
// nothing and is not reported to the guards as a failure. It is a local
// rejection, so errors.Is(err, retry.ErrRejected) holds too, and the
// net/http error stays reachable.
var ErrInvalidRequest = engine.NewRejection("unherdhttp: net/http refuses to send the request")

// invalidRequestError is the error of a request net/http refused to send:
// why (as net/http says it, without values) and net/http's own error.
type invalidRequestError struct {
	why string
	err error
}

func (e *invalidRequestError) Error() string {
	return ErrInvalidRequest.Error() + " (" + e.why + "): " + e.err.Error()
}
func (e *invalidRequestError) Unwrap() []error { return []error{ErrInvalidRequest, e.err} }

// refusal returns why net/http's Transport refuses to send req, or "" if
// it would send it. It mirrors the checks http.Transport makes before it
// dials. The scheme is checked only when schemes is set (the base is an
// *http.Transport, which serves http and https); other bases may serve
// other schemes.
func refusal(req *http.Request, schemes bool) string {
	switch {
	case req.URL == nil:
		return "nil URL"
	case req.Header == nil:
		return "nil Header"
	}
	isHTTP := req.URL.Scheme == "http" || req.URL.Scheme == "https"
	if !isHTTP {
		if schemes {
			return "unsupported protocol scheme"
		}
		return ""
	}
	if why := invalidFields(req.Header); why != "" {
		return "header " + why
	}
	if why := invalidFields(req.Trailer); why != "" {
		return "trailer " + why
	}
	switch {
	case req.Method != "" && !validToken(req.Method):
		return "invalid method"
	case req.URL.Host == "":
		return "no Host in URL"
	}
	return ""
}

// invalidFields says which field of h net/http would refuse, naming it but
// not its value (which may be sensitive), or "".
func invalidFields(h http.Header) string {
	for k, vs := range h {
		if !validToken(k) {
			return "field name is invalid"
		}
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return "field value for " + k + " is invalid"
			}
		}
	}
	return ""
}

// validToken reports whether s is a token (RFC 9110, section 5.6.2), as
// header field names and methods must be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

// tokenChar marks the tchar bytes of RFC 9110, section 5.6.2.
var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
