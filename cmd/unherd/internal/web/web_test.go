package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGeneratedAssetsUpToDate rebuilds the wasm and compares it, and the
// loader and vendored files, with the committed ones (go run ./gen
// -check): a change to the simulator without go generate fails here.
func TestGeneratedAssetsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the simulator for WebAssembly: not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "./gen", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./gen -check: %v\n%s", err, out)
	}
}

func get(t *testing.T, h http.Handler, path, acceptEncoding string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandlerServesThePage checks the page, its scripts and the simulator,
// compressed or not, with the types browsers require.
func TestHandlerServesThePage(t *testing.T) {
	h := Handler()
	r := get(t, h, "/", "")
	if b := body(t, r); r.StatusCode != 200 || !bytes.Contains(b, []byte(`id="result"`)) {
		t.Fatalf("GET / = %d, %.100q; want the page with #result", r.StatusCode, b)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q; want everything from the page's own origin", csp)
	}
	for _, p := range []string{"/app.js", "/worker.js", "/wasm_exec.js", "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css", "/vendor/uPlot.LICENSE", "/style.css"} {
		if r := get(t, h, p, ""); r.StatusCode != 200 {
			t.Errorf("GET %s = %d; want 200", p, r.StatusCode)
		}
	}
	plain := get(t, h, "/unherd.wasm", "")
	raw := body(t, plain)
	if plain.Header.Get("Content-Type") != "application/wasm" || plain.Header.Get("Content-Encoding") != "" || !bytes.HasPrefix(raw, []byte("\x00asm")) {
		t.Fatalf("GET /unherd.wasm without gzip: type %q, encoding %q, starts %q; want uncompressed application/wasm",
			plain.Header.Get("Content-Type"), plain.Header.Get("Content-Encoding"), raw[:min(4, len(raw))])
	}
	zipped := get(t, h, "/unherd.wasm", "br, gzip")
	if zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET /unherd.wasm accepting gzip: encoding %q; want gzip", zipped.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	if unzipped, err := io.ReadAll(zr); err != nil || !bytes.Equal(unzipped, raw) {
		t.Errorf("the gzip-compressed wasm (%v) differs from the uncompressed one", err)
	}
	// A browser revalidating its copy of either encoding hears 304.
	for _, r := range []*http.Response{plain, zipped} {
		tag := r.Header.Get("ETag")
		if tag == "" {
			t.Fatalf("GET /unherd.wasm (encoding %q) has no ETag: a browser cannot revalidate its copy", r.Header.Get("Content-Encoding"))
		}
		req := httptest.NewRequest("GET", "/unherd.wasm", nil)
		req.Header.Set("If-None-Match", tag)
		if r.Header.Get("Content-Encoding") == "gzip" {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("GET /unherd.wasm with If-None-Match %s = %d; want 304", tag, rec.Code)
		}
	}
	if plain.Header.Get("ETag") == zipped.Header.Get("ETag") {
		t.Errorf("both encodings of /unherd.wasm have the ETag %s; each representation needs its own", plain.Header.Get("ETag"))
	}
	if r := get(t, h, "/unherd.wasm.gz", ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /unherd.wasm.gz = %d; want 404 (the simulator is served as /unherd.wasm)", r.StatusCode)
	}
}

// TestExport checks that the exported page holds every file, with the
// simulator uncompressed under the name the page fetches.
func TestExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	if err := Export(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "app.js", "worker.js", "wasm_exec.js", "style.css", "vendor/uPlot.iife.min.js", "vendor/uPlot.LICENSE"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the export lacks %s: %v", name, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "unherd.wasm"))
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Errorf("the export's unherd.wasm (%v) is not WebAssembly", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unherd.wasm.gz")); err == nil {
		t.Error("the export holds unherd.wasm.gz; a static host would not serve it as the page asks")
	}
}
