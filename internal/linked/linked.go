// Package linked is a doubly linked list whose elements carry their own
// links, so that taking one out, wherever it is, costs neither a search
// nor an allocation: the queue of a concurrency limiter's waiters, the
// records of the idempotency store's memory, by age.
package linked

// Links is the field an element of a [List] embeds: its neighbours on
// the one list it may be on at a time.
type Links[T any] struct{ prev, next *T }

func (l *Links[T]) links() *Links[T] { return l }

// Element is a pointer to a T that embeds Links[T].
type Element[T any] interface {
	*T
	links() *Links[T]
}

// List is a list of elements, the oldest pushed at the head. The zero
// value is an empty list. It is not safe for concurrent use.
type List[T any, E Element[T]] struct{ head, tail *T }

// Head returns the oldest element, nil if the list is empty.
func (l *List[T, E]) Head() *T { return l.head }

// Tail returns the newest element, nil if the list is empty.
func (l *List[T, E]) Tail() *T { return l.tail }

// Push appends x, which is on no list, at the tail.
func (l *List[T, E]) Push(x *T) {
	E(x).links().prev, E(x).links().next = l.tail, nil
	if l.tail != nil {
		E(l.tail).links().next = x
	} else {
		l.head = x
	}
	l.tail = x
}

// Remove takes x, which is on l, off it.
func (l *List[T, E]) Remove(x *T) {
	n := E(x).links()
	if n.prev != nil {
		E(n.prev).links().next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		E(n.next).links().prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}
