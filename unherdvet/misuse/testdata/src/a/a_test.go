package a

import "github.com/unherd/unherd/backoff"

// Test files are not checked.
var fixed = backoff.Schedule{Jitter: backoff.None, Immediate: true}
