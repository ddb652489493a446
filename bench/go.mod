module github.com/unherd/unherd/bench

go 1.25

replace github.com/unherd/unherd => ..
