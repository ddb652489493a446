// Command gen writes the generated assets of the page of `unherd serve`
// into ../static (run by go generate in package web):
//
//   - unherd.wasm.gz, package wasm built with GOOS=js GOARCH=wasm
//     -trimpath -ldflags=-s -w, optimised with the command's own CPU
//     profile (cmd/unherd/default.pgo, which scripts/pgo.sh writes: the
//     same simulator code is hot in both), and compressed;
//   - wasm_exec.js, the loader of the toolchain that built it;
//   - vendor/, the chart library uPlot with its licence, copied from
//     node_modules after `npm ci` (skipped, with a note, when node_modules
//     is absent).
//
// With -check it writes nothing and exits 1 when a committed asset differs
// from what it would write, saying how to regenerate: a test runs it so
// that the page never serves a simulator older than the code.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	check := flag.Bool("check", false, "write nothing; exit 1 if a committed asset is stale")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := run(ctx, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// The directories, relative to package web, where go generate runs.
const (
	static  = "static"
	modules = "node_modules/uplot"
)

// vendored maps a file of the npm package to its name under static/vendor.
var vendored = map[string]string{
	"dist/uPlot.iife.min.js": "uPlot.iife.min.js",
	"dist/uPlot.min.css":     "uPlot.min.css",
	"LICENSE":                "uPlot.LICENSE",
}

func run(ctx context.Context, check bool) error {
	goroot, err := goEnv(ctx, "GOROOT")
	if err != nil {
		return err
	}
	wasm, err := build(ctx)
	if err != nil {
		return err
	}
	var stale []string
	// The wasm is compared uncompressed, so that a compressor that
	// changes with the toolchain does not count as staleness.
	if old, err := gunzipFile(filepath.Join(static, "unherd.wasm.gz")); err != nil || !bytes.Equal(old, wasm) {
		stale = append(stale, "static/unherd.wasm.gz")
		if !check {
			if err := os.WriteFile(filepath.Join(static, "unherd.wasm.gz"), gz(wasm), 0o644); err != nil {
				return err
			}
		}
	}
	files := map[string]string{filepath.Join(goroot, "lib", "wasm", "wasm_exec.js"): filepath.Join(static, "wasm_exec.js")}
	if _, err := os.Stat(modules); err == nil {
		for from, to := range vendored {
			files[filepath.Join(modules, from)] = filepath.Join(static, "vendor", to)
		}
	} else {
		fmt.Fprintf(os.Stderr, "gen: %s is absent (run npm ci in package web to vendor the chart library); static/vendor left as it is\n", modules)
	}
	for from, to := range files {
		want, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if have, err := os.ReadFile(to); err == nil && bytes.Equal(have, want) {
			continue
		}
		stale = append(stale, filepath.ToSlash(strings.TrimPrefix(to, static+string(filepath.Separator))))
		if !check {
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(to, want, 0o644); err != nil {
				return err
			}
		}
	}
	if check && len(stale) > 0 {
		v, _ := goEnv(ctx, "GOVERSION")
		return fmt.Errorf("stale generated assets: %s; regenerate them with `go generate ./internal/web` in cmd/unherd (with %s, the toolchain the check ran) and commit them", strings.Join(stale, ", "), v)
	}
	return nil
}

// pgoProfile is the profile the wasm is optimised with, from this
// package's directory: the unherd command's default.pgo.
const pgoProfile = "../../default.pgo"

// build compiles package wasm for GOOS=js GOARCH=wasm and returns the
// binary.
func build(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "unherd-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "unherd.wasm")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-pgo="+pgoProfile, "-o", out, "./wasm")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the wasm: %w\n%s", err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

func goEnv(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gz compresses b with no name or time in the header, so that the same
// input gives the same file.
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func gunzipFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(r)
}
