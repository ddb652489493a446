package release_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unherd/unherd/release"
)

// version is the release the test cuts in its clone.
const version = "v0.1.0"

// TestReleaseFromProxy cuts a release in a clone of the repository, serves
// its tags from a file-system module proxy, and uses it as a user outside
// the repository would: with GOWORK=off and a module cache of its own, go
// install of the command at the release's version, then go get of every
// module in a fresh module that builds and runs a program importing each
// of them. Only committed work is in the clone.
func TestReleaseFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module from a proxy: not in -short")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout, so there is nothing to release: %v", err)
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	run(t, tmp, nil, "git", "clone", "--quiet", strings.TrimSpace(string(root)), repo)
	t.Setenv("GIT_AUTHOR_NAME", "release test")
	t.Setenv("GIT_AUTHOR_EMAIL", "release@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "release test")
	t.Setenv("GIT_COMMITTER_EMAIL", "release@example.com")

	if err := release.Prepare(repo, version); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	mods, err := release.Modules(repo)
	if err != nil {
		t.Fatal(err)
	}
	tags := run(t, repo, nil, "git", "tag", "--points-at", "HEAD")
	for _, m := range mods {
		if !strings.Contains("\n"+tags, "\n"+m.Tag(version)+"\n") {
			t.Errorf("no tag %s at the release commit; tags there:\n%s", m.Tag(version), tags)
		}
		for _, r := range m.Requires {
			gomod, err := os.ReadFile(filepath.Join(repo, m.Dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(gomod), r+" "+version) {
				t.Errorf("%s/go.mod does not require %s %s", m.Dir, r, version)
			}
		}
	}
	if err := release.Prepare(repo, version); err == nil {
		t.Errorf("Prepare of a version already tagged succeeded, want an error")
	}

	proxy := filepath.Join(tmp, "proxy")
	if err := release.WriteProxy(repo, version, proxy); err != nil {
		t.Fatalf("WriteProxy: %v", err)
	}
	// Every module outside the repository comes from the module cache the
	// test runs with (the suite has downloaded them), and else from the
	// usual proxy; the repository's come from the release's proxy only.
	hostCache := strings.TrimSpace(run(t, tmp, nil, "go", "env", "GOMODCACHE"))
	hostProxy := strings.TrimSpace(run(t, tmp, nil, "go", "env", "GOPROXY"))
	env := []string{
		"GOWORK=off",
		"GOFLAGS=-modcacherw",
		"GOTOOLCHAIN=local",
		"GOMODCACHE=" + filepath.Join(tmp, "modcache"),
		"GOBIN=" + filepath.Join(tmp, "bin"),
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(hostCache, "cache", "download")) + "," + hostProxy,
		"GONOPROXY=", "GOPRIVATE=",
		// The modules' own go.sum files are checked; no checksum database
		// knows a release that only this proxy serves.
		"GOSUMDB=off",
	}
	t.Cleanup(func() {
		// Empty the test's own module cache (never the host's: the
		// command runs with env) so that TempDir can remove it.
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), env...)
		if out, err := clean.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache of the test's cache: %v\n%s", err, out)
		}
	})

	run(t, tmp, env, "go", "install", "github.com/unherd/unherd/cmd/unherd@"+version)
	if out := run(t, tmp, env, filepath.Join(tmp, "bin", "unherd"), "help"); !strings.Contains(out, "whatif") {
		t.Errorf("unherd help printed %q, want the usage with whatif", out)
	}

	user := filepath.Join(tmp, "user")
	if err := os.Mkdir(user, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, user, env, "go", "mod", "init", "example.com/firsthour")
	var imports []string
	for _, m := range mods {
		switch m.Dir {
		case "bench", "e2e", "release", "cmd/unherd":
			// Test and tool modules: tagged with the release, nothing to import.
			continue
		}
		run(t, user, env, "go", "get", m.Path+"@"+version)
		if m.Dir != "" {
			imports = append(imports, "\t_ \""+m.Path+"\"\n")
		}
	}
	program := `package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/unherd/unherd/retry"
` + strings.Join(imports, "") + `)

func main() {
	p, err := retry.New(retry.Config{MaxAttempts: 3})
	if err != nil {
		panic(err)
	}
	calls := 0
	_, err = retry.DoValue(context.Background(), p, func(context.Context) (struct{}, error) {
		calls++
		if calls < 2 {
			return struct{}{}, errors.New("transient")
		}
		return struct{}{}, nil
	})
	fmt.Println("calls:", calls, "err:", err)
}
`
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, user, env, "go", "mod", "tidy")
	if out := run(t, user, env, "go", "run", "."); strings.TrimSpace(out) != "calls: 2 err: <nil>" {
		t.Errorf("the program printed %q, want %q", out, "calls: 2 err: <nil>")
	}
	for _, m := range mods {
		if m.Dir == "" || strings.Contains(string(mustRead(t, filepath.Join(user, "go.mod"))), m.Path+" "+version) {
			continue
		}
		switch m.Dir {
		case "bench", "e2e", "release", "cmd/unherd":
			continue
		}
		t.Errorf("the user's go.mod does not require %s %s", m.Path, version)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs a command in dir with env added to the test's environment,
// within five minutes, and returns its standard output; it fails the test
// with the command's output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s%s", name, strings.Join(args, " "), dir, err, out, stderr.String())
	}
	return string(out)
}
