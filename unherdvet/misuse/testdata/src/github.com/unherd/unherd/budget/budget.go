// Package budget is a stub of unherd's budget for the tests.
package budget

type Budget interface{ Withdraw() bool }

type unlimited struct{}

func (unlimited) Withdraw() bool { return true }

var Unlimited Budget = unlimited{}

type TokenBucketConfig struct{}
type TokenBucket struct{}

func (*TokenBucket) Withdraw() bool { return true }

func NewTokenBucket(TokenBucketConfig) (*TokenBucket, error) { return &TokenBucket{}, nil }

type RatioConfig struct{ Ratio float64 }
type Ratio struct{}

func (*Ratio) Withdraw() bool { return true }

func NewRatio(RatioConfig) (*Ratio, error) { return &Ratio{}, nil }
