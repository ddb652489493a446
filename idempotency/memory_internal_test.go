package idempotency

import (
	"runtime"
	"testing"
)

var sink []byte

// allocSize agrees with what the allocator takes, as the runtime counts
// it.
func TestAllocSize(t *testing.T) {
	var before, after runtime.MemStats
	for n := 16; n < 80<<10; n += 1 + n/7 {
		runtime.ReadMemStats(&before)
		sink = make([]byte, n)
		runtime.ReadMemStats(&after)
		if got, want := allocSize(n), int64(after.TotalAlloc-before.TotalAlloc); got != want {
			t.Errorf("allocSize(%d) = %d, the allocator took %d", n, got, want)
		}
	}
	sink = nil
}
