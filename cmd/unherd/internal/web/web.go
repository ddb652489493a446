// Package web is the page of `unherd serve`: a form for a retry policy and
// the scenarios' parameters, charts, and the simulator itself compiled to
// WebAssembly, running in Web Workers. Every asset is embedded, so the
// page needs no network beyond the server that serves it, and [Export]
// writes it as static files for any static host.
//
// The generated assets (the wasm, its loader, the vendored chart library)
// are committed; `go generate` rebuilds them (see package gen), and a test
// fails when they are stale.
package web

//go:generate go run ./gen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

//go:embed static
var assets embed.FS

// wasmGz is the simulator as stored: gzip-compressed. It is served as
// unherd.wasm, compressed to clients that accept gzip.
const wasmGz = "unherd.wasm.gz"

// Static returns the page's files, with the simulator compressed as
// unherd.wasm.gz.
func Static() fs.FS {
	sub, err := fs.Sub(assets, "static")
	if err != nil {
		panic(err) // "static" is a valid path: cannot happen
	}
	return sub
}

// Handler serves the page: index.html at /, the other assets by name,
// and the simulator at /unherd.wasm (gzip-compressed when the client
// accepts it).
func Handler() http.Handler {
	files := http.FileServerFS(Static())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		// Nothing the page uses comes from another origin.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		switch r.URL.Path {
		case "/unherd.wasm":
			serveWasm(w, r)
		case "/" + wasmGz:
			http.NotFound(w, r)
		default:
			files.ServeHTTP(w, r)
		}
	})
}

func serveWasm(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(Static(), wasmGz)
	if err != nil {
		http.Error(w, "the simulator is missing from the binary: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/wasm")
	w.Header().Add("Vary", "Accept-Encoding")
	// The tag names the bytes stored, and each encoding's its own: a
	// browser revalidating its copy (the page's Cache-Control is no-cache)
	// hears 304 and keeps it, with the machine code it compiled from it.
	tag := wasmTag(b)
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("ETag", `"`+tag+`-gzip"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
		return
	}
	w.Header().Set("ETag", `"`+tag+`"`)
	raw, err := gunzip(b)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(raw))
}

// wasmTag is the entity tag of the simulator stored as gz: the start of
// its SHA-256, in hex.
func wasmTag(gz []byte) string {
	sum := sha256.Sum256(gz)
	return hex.EncodeToString(sum[:12])
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the embedded simulator is not gzip: %w", err)
	}
	return io.ReadAll(r)
}

// Export writes the page into dir as static files (the simulator
// uncompressed, as unherd.wasm), creating dir if needed. A static host
// serving dir serves the same page as Handler, provided it serves .wasm
// files as application/wasm, as common hosts do.
func Export(dir string) error {
	return fs.WalkDir(Static(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := fs.ReadFile(Static(), p)
		if err != nil {
			return err
		}
		if path.Base(p) == wasmGz {
			if b, err = gunzip(b); err != nil {
				return err
			}
			to = strings.TrimSuffix(to, ".gz")
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return fmt.Errorf("exporting the page: %w", err)
		}
		return nil
	})
}
