package linked

import (
	"slices"
	"testing"
)

type item struct {
	Links[item]
	v int
}

// values returns the list's values head to tail, and checks that the
// links agree read tail to head.
func values(t *testing.T, l *List[item, *item]) []int {
	t.Helper()
	var fwd, back []int
	for x := l.Head(); x != nil; x = x.next {
		fwd = append(fwd, x.v)
	}
	for x := l.Tail(); x != nil; x = x.prev {
		back = append(back, x.v)
	}
	slices.Reverse(back)
	if !slices.Equal(fwd, back) {
		t.Fatalf("head to tail %v, tail to head reversed %v", fwd, back)
	}
	return fwd
}

func TestList(t *testing.T) {
	tests := []struct {
		name   string
		remove []int // indexes of the items 0..3 to remove, in order
		want   []int
	}{
		{name: "none", want: []int{0, 1, 2, 3}},
		{name: "head", remove: []int{0}, want: []int{1, 2, 3}},
		{name: "tail", remove: []int{3}, want: []int{0, 1, 2}},
		{name: "middle", remove: []int{2}, want: []int{0, 1, 3}},
		{name: "all", remove: []int{1, 0, 3, 2}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List[item, *item]
			items := make([]*item, 4)
			for i := range items {
				items[i] = &item{v: i}
				l.Push(items[i])
			}
			for _, i := range tt.remove {
				l.Remove(items[i])
				if items[i].prev != nil || items[i].next != nil {
					t.Errorf("item %d keeps links after Remove", i)
				}
			}
			if got := values(t, &l); !slices.Equal(got, tt.want) {
				t.Errorf("list %v, want %v", got, tt.want)
			}
			// A removed item can be pushed again, as the newest.
			if len(tt.remove) > 0 {
				l.Push(items[tt.remove[0]])
				want := append(slices.Clone(tt.want), tt.remove[0])
				if got := values(t, &l); !slices.Equal(got, want) {
					t.Errorf("after pushing item %d again: %v, want %v", tt.remove[0], got, want)
				}
			}
		})
	}
}

func TestZeroList(t *testing.T) {
	var l List[item, *item]
	if l.Head() != nil || l.Tail() != nil {
		t.Error("the zero List is not empty")
	}
}
