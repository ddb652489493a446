package limit

import (
	"testing"
	"time"
)

// FuzzUpdate feeds arbitrary samples to both adaptive algorithms: the
// limit stays within [MinLimit, MaxLimit] whatever the RTT (zero,
// negative, huge) or the in-flight count.
func FuzzUpdate(f *testing.F) {
	f.Add(int64(10e6), 5, false, int64(1), 3)
	f.Add(int64(0), 0, true, int64(-5), 1)
	f.Add(int64(1<<62), 1<<30, false, int64(1<<62), 100)
	f.Fuzz(func(t *testing.T, rtt int64, inFlight int, dropped bool, rtt2 int64, n int) {
		a, _ := NewAIMD(AIMDConfig{MinLimit: 2, MaxLimit: 50})
		g, _ := NewGradient2(Gradient2Config{MinLimit: 2, MaxLimit: 50})
		for i := range min(max(n, 1), 200) {
			s := Sample{RTT: time.Duration(rtt), InFlight: inFlight, Dropped: dropped}
			if i%2 == 1 {
				s.RTT = time.Duration(rtt2)
			}
			for _, alg := range []Algorithm{a, g} {
				if got := alg.Update(s); got < 2 || got > 50 || got != alg.Limit() {
					t.Fatalf("%T: Update(%+v) = %d (Limit %d), want within [2, 50]", alg, s, got, alg.Limit())
				}
			}
		}
	})
}
