module github.com/unherd/unherd

go 1.25

require (
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
)
