package budget

import "errors"

// ErrInvalidConfig is wrapped by every error a constructor or Validate
// returns; the message names the offending field.
var ErrInvalidConfig = errors.New("budget: invalid config")

// cacheLine is the padding, in bytes, that keeps a budget's hot counter off
// the cache line of its read-only configuration: without it every write to
// the counter would evict the configuration from the other cores' caches.
const cacheLine = 64
