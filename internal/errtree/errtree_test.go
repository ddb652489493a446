package errtree

import (
	"errors"
	"fmt"
	"testing"
)

type marker struct{ n int }

func (m *marker) Error() string { return fmt.Sprint("marker ", m.n) }

type timeouter interface{ Timeout() bool }

type tErr struct{}

func (tErr) Error() string { return "t" }
func (tErr) Timeout() bool { return true }

func TestFind(t *testing.T) {
	m1, m2 := &marker{1}, &marker{2}
	tests := []struct {
		name string
		err  error
		want *marker
	}{
		{"nil", nil, nil},
		{"plain", errors.New("x"), nil},
		{"direct", m1, m1},
		{"wrapped", fmt.Errorf("a: %w", m1), m1},
		{"joined first wins", errors.Join(errors.New("x"), m2, m1), m2},
		{"nested join", fmt.Errorf("a: %w", errors.Join(errors.New("x"), fmt.Errorf("b: %w", m1))), m1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Find[*marker](tc.err)
			if got != tc.want || ok != (tc.want != nil) {
				t.Fatalf("Find = %v, %v; want %v", got, ok, tc.want)
			}
			var as *marker
			if errors.As(tc.err, &as) != ok || as != got {
				t.Fatalf("Find disagrees with errors.As: %v vs %v", got, as)
			}
		})
	}
}

func TestFindInterface(t *testing.T) {
	err := fmt.Errorf("op: %w", tErr{})
	if _, ok := Find[timeouter](err); !ok {
		t.Fatal("interface not found")
	}
}

func TestFindAllocs(t *testing.T) {
	err := fmt.Errorf("a: %w", errors.Join(errors.New("x"), &marker{1}))
	if n := testing.AllocsPerRun(100, func() { Find[*marker](err) }); n != 0 {
		t.Fatalf("Find allocates %v times", n)
	}
}
