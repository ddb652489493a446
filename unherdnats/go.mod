module github.com/unherd/unherd/unherdnats

go 1.25

require (
	github.com/nats-io/nats.go v1.53.1
	github.com/unherd/unherd v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/klauspost/compress v1.18.5 // indirect
	github.com/nats-io/nkeys v0.4.15 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.49.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
)
