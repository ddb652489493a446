// Command release cuts a release of every module of the repository, or
// writes a file-system module proxy from the tags of one.
//
//	release [-repo DIR] VERSION            # commit and tag VERSION
//	release [-repo DIR] -proxy OUT VERSION # serve tagged VERSION from OUT
//
// See package release for what a release changes. Nothing is pushed:
// publishing is `git push origin HEAD` and the tags it printed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/unherd/unherd/release"
)

func main() {
	repo := flag.String("repo", ".", "the repository's root")
	proxy := flag.String("proxy", "", "write a GOPROXY directory for the tagged `VERSION` here instead of cutting it")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: release [-repo DIR] [-proxy OUT] VERSION")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	version := flag.Arg(0)
	if *proxy != "" {
		if err := release.WriteProxy(*repo, version, *proxy); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("GOPROXY=file://%s\n", *proxy)
		return
	}
	if err := release.Prepare(*repo, version); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mods, err := release.Modules(*repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, m := range mods {
		fmt.Println(m.Tag(version))
	}
}
