package failure

// Class is how a failed attempt is treated. The zero value is Transient.
type Class uint8

const (
	// Transient is an ordinary retryable failure: a reset connection, a
	// 500, 502 or 504, a gRPC UNAVAILABLE (pushback or not). It is retried
	// on the normal schedule.
	Transient Class = iota
	// Timeout is an attempt that ran out of time (its own attempt timeout,
	// or a net.Error that reports Timeout). It is retried; budgets may
	// charge it more, since a timeout suggests an overloaded dependency.
	Timeout
	// Throttled is a failure in which the dependency asked for less
	// traffic: HTTP 429 and every HTTP 503 (with or without Retry-After,
	// see OfHTTPStatus), gRPC RESOURCE_EXHAUSTED. It is retried from the
	// schedule's throttled base.
	Throttled
	// Permanent is a failure that repeating cannot fix: validation,
	// authorisation, not found. It is never retried.
	Permanent
)

var names = [...]string{Transient: "transient", Timeout: "timeout", Throttled: "throttled", Permanent: "permanent"}

// String returns the class's lower-case name, or "unknown" for a value
// that is none of the constants.
func (c Class) String() string {
	if int(c) < len(names) {
		return names[c]
	}
	return "unknown"
}

// OfHTTPStatus classifies an HTTP response by its status code, the one
// table unherdhttp's Transport and package chaos share. failed is false
// for a status that is not a failure (below 400). 429 Too Many Requests
// and 503 Service Unavailable are Throttled (the server asks for less
// traffic); 408 Request Timeout, 502, 504, 500 and every 5xx not named
// here (505, 507, 520 to 527, ...) are Transient; 501 Not Implemented and
// every other 4xx are Permanent.
func OfHTTPStatus(code int) (c Class, failed bool) {
	switch code {
	case 429, 503:
		return Throttled, true
	case 408, 502, 504:
		return Transient, true
	case 501:
		return Permanent, true
	}
	switch {
	case code >= 500:
		return Transient, true
	case code >= 400:
		return Permanent, true
	}
	return Transient, false
}
