module github.com/unherd/unherd/cmd/unherd

go 1.25

replace github.com/unherd/unherd => ../..
