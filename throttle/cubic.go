package throttle

import "math"

// Constants of the AWS SDKs' adaptive retry mode ("client rate limiter"),
// as published in the SDKs' retry behavior specification and implemented
// by botocore (botocore/retries/adaptive.py, bucket.py) and the AWS SDK for
// Go v2 (aws/retry/adaptive_ratelimit.go).
const (
	// CubicScale is CUBIC's scaling constant C.
	CubicScale = 0.4
	// CubicBeta is CUBIC's multiplicative decrease: a throttling response
	// cuts the rate to Beta times what the client was sending.
	CubicBeta = 0.7
	// RateSmoothing is the weight of the newest bucket in the
	// exponentially smoothed send rate.
	RateSmoothing = 0.8
	// RateBucket is the width of the send-rate measurement buckets, in
	// seconds.
	RateBucket = 0.5
	// MinFillRate is the lowest token fill rate, in tokens per second.
	MinFillRate = 0.5
	// MinCapacity is the smallest bucket capacity, in tokens.
	MinCapacity = 1.0
)

// limiter is the state of the AWS adaptive client rate limiter. Its
// methods are the published algorithm, one function each, taking time as
// explicit seconds; they are pure apart from updating the receiver, and
// the caller serialises them. Names follow the specification.
type limiter struct {
	fillRate        float64 // tokens per second
	maxCapacity     float64
	currentCapacity float64 // negative while callers wait on reserved tokens
	lastTimestamp   float64
	haveTimestamp   bool
	enabled         bool // set by the first throttling response

	measuredTxRate   float64
	lastTxRateBucket float64
	requestCount     float64
	lastMaxRate      float64
	lastThrottleTime float64
	timeWindow       float64
}

// newLimiter is the initial state at time now.
func newLimiter(now float64) limiter {
	return limiter{lastTxRateBucket: math.Floor(now), lastThrottleTime: now}
}

// acquire is token_bucket_acquire for one token: it returns how long the
// caller must wait (zero while the bucket is not enabled, that is before
// the first throttling response) and takes the token, which may leave the
// capacity negative: the token is reserved for the caller that waits.
func (l *limiter) acquire(now float64) (wait float64) {
	if !l.enabled {
		return 0
	}
	l.refill(now)
	if l.currentCapacity < 1 {
		wait = (1 - l.currentCapacity) / l.fillRate
	}
	l.currentCapacity--
	return wait
}

// release gives back a token that acquire reserved for a caller who gave
// up waiting.
func (l *limiter) release() {
	l.currentCapacity = min(l.currentCapacity+1, l.maxCapacity)
}

// refill is token_bucket_refill.
func (l *limiter) refill(now float64) {
	if !l.haveTimestamp {
		l.lastTimestamp, l.haveTimestamp = now, true
		return
	}
	if now <= l.lastTimestamp {
		return
	}
	l.currentCapacity = min(l.maxCapacity, l.currentCapacity+(now-l.lastTimestamp)*l.fillRate)
	l.lastTimestamp = now
}

// updateRate is token_bucket_update_rate.
func (l *limiter) updateRate(now, newRPS float64) {
	l.refill(now)
	l.fillRate = max(newRPS, MinFillRate)
	l.maxCapacity = max(newRPS, MinCapacity)
	l.currentCapacity = min(l.currentCapacity, l.maxCapacity)
}

// updateMeasuredRate is update_measured_rate: the send rate in 0.5 s
// buckets, smoothed exponentially.
func (l *limiter) updateMeasuredRate(now float64) {
	bucket := math.Floor(now/RateBucket) * RateBucket
	l.requestCount++
	if bucket > l.lastTxRateBucket {
		current := l.requestCount / (bucket - l.lastTxRateBucket)
		l.measuredTxRate = current*RateSmoothing + l.measuredTxRate*(1-RateSmoothing)
		l.requestCount = 0
		l.lastTxRateBucket = bucket
	}
}

// calculateTimeWindow is calculate_time_window: CUBIC's K, the time the
// cubic takes to climb back to the rate before the last throttle.
func (l *limiter) calculateTimeWindow() {
	l.timeWindow = math.Cbrt(l.lastMaxRate * (1 - CubicBeta) / CubicScale)
}

// cubicSuccess is cubic_success: the rate CUBIC allows at time now.
func (l *limiter) cubicSuccess(now float64) float64 {
	dt := now - l.lastThrottleTime
	return CubicScale*math.Pow(dt-l.timeWindow, 3) + l.lastMaxRate
}

// cubicThrottle is cubic_throttle: multiplicative decrease.
func cubicThrottle(rate float64) float64 { return rate * CubicBeta }

// update is update_client_sending_rate, after a response at time now.
func (l *limiter) update(now float64, throttled bool) {
	l.updateMeasuredRate(now)
	var rate float64
	if throttled {
		use := l.measuredTxRate
		if l.enabled {
			use = min(l.measuredTxRate, l.fillRate)
		}
		l.lastMaxRate = use
		l.calculateTimeWindow()
		l.lastThrottleTime = now
		rate = cubicThrottle(use)
		l.enabled = true
	} else {
		l.calculateTimeWindow()
		rate = l.cubicSuccess(now)
	}
	l.updateRate(now, min(rate, 2*l.measuredTxRate))
}
