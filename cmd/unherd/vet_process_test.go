//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unherd/unherd/internal/await"
)

// These tests run unherd vet in a process of its own (this test binary,
// through TestVetChild), in a process group of its own, so that they can
// signal it, bound its time, read its peak memory and see what it leaves
// running.

// TestVetChild is not a test: it runs the unherd command line in
// UNHERD_VET_ARGS (one argument a line) when a test above starts this
// binary as a child.
func TestVetChild(t *testing.T) {
	args, ok := os.LookupEnv("UNHERD_VET_ARGS")
	if !ok {
		t.Skip("runs only as the child of the vet process tests")
	}
	os.Exit(runMain(strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// child is unherd running in a process group of its own.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

// startVet starts unherd with args in dir, with env added to this
// process's environment. Whatever is left in its process group is killed
// when the test ends, and the child itself when ctx is done.
func startVet(ctx context.Context, t *testing.T, dir string, env []string, args ...string) *child {
	t.Helper()
	c := &child{done: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestVetChild$", "-test.count=1")
	c.cmd.Dir = dir
	c.cmd.Env = append(append(os.Environ(), env...), "UNHERD_VET_ARGS="+strings.Join(args, "\n"))
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Cancel = func() error { return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) }
	c.cmd.WaitDelay = 5 * time.Second
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := c.cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	go func() { c.done <- c.cmd.Wait() }()
	return c
}

// wait waits for c to exit, at most d: it returns c's Wait error, or
// fails the test, saying what is still running, after d.
func (c *child) wait(t *testing.T, d time.Duration, what string) error {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-c.done:
		return err
	case <-timer.C:
		t.Fatalf("unherd vet still running %v after %s; in its process group: %v", d, what, groupMembers(t, c.cmd.Process.Pid))
		return nil
	}
}

// exitCode is the child's exit code, or -1 when a signal ended it.
func (c *child) exitCode() int { return c.cmd.ProcessState.ExitCode() }

// maxRSS is the peak resident memory, in bytes, of the child and of the
// processes it waited for.
func (c *child) maxRSS() int64 {
	ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return ru.Maxrss * 1024
}

// groupMembers lists the live processes (pid and command name) of
// process group pgid, zombies left out.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			out = append(out, strconv.Itoa(pid)+" "+s[strings.IndexByte(s, '(')+1:i])
		}
	}
	return out
}

// noneLeft fails the test when anything of c's process group is still
// running a second after c exited.
func noneLeft(t *testing.T, c *child) {
	t.Helper()
	pgid := c.cmd.Process.Pid
	var left []string
	if !await.Until(time.Second, 100*time.Millisecond, func() bool {
		left = groupMembers(t, pgid)
		return len(left) == 0
	}) {
		t.Errorf("still running a second after unherd exited: %v", left)
	}
}

// writeModule writes a module called path into a new directory, with
// files (name: source), and returns the directory.
func writeModule(t *testing.T, path, gomodExtra string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module "+path+"\n\ngo 1.25\n"+gomodExtra)
	for name, src := range files {
		write(t, filepath.Join(dir, name), src)
	}
	return dir
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVetHostile points vet at code that made the compiler or the C
// preprocessor run for minutes and take gigabytes: each run must end
// within a minute, say what it could not check and exit 2, leave nothing
// running, and stay below 1 GiB.
func TestVetHostile(t *testing.T) {
	const bound = 60 * time.Second
	for _, tc := range []struct {
		name string
		src  string
	}{
		{"loops3000", "package p\n\nfunc F() {\n" + strings.Repeat("for {\n", 3000) + strings.Repeat("}\n", 3000) + "}\n"},
		{"closures2000", "package p\n\nfunc F() {\n" + strings.Repeat("func() {\n", 2000) + strings.Repeat("}()\n", 2000) + "}\n"},
		{"closures300", "package p\n\nfunc F() {\n" + strings.Repeat("func() {\n", 300) + strings.Repeat("}()\n", 300) + "}\n"},
		{"cgoDevZero", "package p\n\n/*\n#include \"/dev/zero\"\n*/\nimport \"C\"\n\nfunc F() {}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeModule(t, "example.com/hostile", "", map[string]string{"p.go": tc.src})
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			start := time.Now()
			c := startVet(ctx, t, dir, nil, "vet", ".")
			err := c.wait(t, bound+10*time.Second, "it started")
			elapsed := time.Since(start)
			t.Logf("exit %d after %v, peak RSS %d MiB; stderr:\n%s", c.exitCode(), elapsed.Round(time.Millisecond), c.maxRSS()>>20, c.stderr.String())
			if ctx.Err() != nil {
				t.Fatalf("vet still running after %v: killed (%v)", bound, err)
			}
			if c.exitCode() != exitNotChecked {
				t.Errorf("exit code %d, want %d (could not check)", c.exitCode(), exitNotChecked)
			}
			if !strings.Contains(c.stderr.String(), "could not check example.com/hostile") {
				t.Errorf("stderr does not name the package it could not check:\n%s", c.stderr.String())
			}
			if rss := c.maxRSS(); rss > 1<<30 {
				t.Errorf("peak RSS %d MiB, want below 1 GiB", rss>>20)
			}
			noneLeft(t, c)
		})
	}
}

// blockingProxy is a module proxy that never answers: go list waits on
// it for as long as the test lets it. It returns the go environment that
// sends downloads to it, and a channel that receives when go list first
// asks it for something.
func blockingProxy(t *testing.T) (env []string, asked <-chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	got := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "test proxy: gone", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return []string{
		"GOPROXY=" + srv.URL, "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE=" + t.TempDir(),
	}, got
}

// waitingModule is a module whose dependency go list must download from
// the blocking proxy.
func waitingModule(t *testing.T) string {
	return writeModule(t, "example.com/waits", "\nrequire example.com/dep v1.0.0\n", map[string]string{
		"w.go": "package w\n\nimport _ \"example.com/dep\"\n",
	})
}

// TestVetSignal stops vet while go list waits for a download: vet must
// exit 130 within seconds and take go list with it.
func TestVetSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			env, asked := blockingProxy(t)
			dir := waitingModule(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := startVet(ctx, t, dir, env, "vet", ".")
			await.Recv(t, asked, "go list to ask the module proxy")
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			c.wait(t, 15*time.Second, sig.String())
			t.Logf("exit %d %v after %v; stderr:\n%s", c.exitCode(), sig, time.Since(start).Round(time.Millisecond), c.stderr.String())
			if c.exitCode() != exitInterrupted {
				t.Errorf("exit code %d, want %d", c.exitCode(), exitInterrupted)
			}
			noneLeft(t, c)
		})
	}
}

// TestVetTimeout bounds a vet whose go list waits for a download: it
// must exit 2 saying it timed out, and leave no go list behind.
func TestVetTimeout(t *testing.T) {
	env, _ := blockingProxy(t)
	dir := waitingModule(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	c := startVet(ctx, t, dir, env, "vet", "--timeout", "2s", ".")
	err := c.wait(t, 70*time.Second, "it started")
	if ctx.Err() != nil {
		t.Fatalf("vet --timeout 2s still running after a minute: killed (%v)", err)
	}
	t.Logf("exit %d after %v; stderr:\n%s", c.exitCode(), time.Since(start).Round(time.Millisecond), c.stderr.String())
	if c.exitCode() != exitNotChecked {
		t.Errorf("exit code %d, want %d", c.exitCode(), exitNotChecked)
	}
	if !strings.Contains(c.stderr.String(), "timed out after 2s") {
		t.Errorf("stderr does not say it timed out:\n%s", c.stderr.String())
	}
	noneLeft(t, c)
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("unherd left its output open after exiting: %v", err)
	}
}
