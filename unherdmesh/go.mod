module github.com/unherd/unherd/unherdmesh

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/unherd/unherd v0.1.0
	go.uber.org/goleak v1.3.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/kr/text v0.1.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)

