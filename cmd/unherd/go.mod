module github.com/unherd/unherd/cmd/unherd

go 1.25.0

replace github.com/unherd/unherd => ../..

require (
	github.com/google/go-cmp v0.7.0
	github.com/unherd/unherd v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v3 v3.0.6
)
