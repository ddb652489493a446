package golden

import (
	"path/filepath"
	"testing"
)

func TestWant(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.golden")
	*update = true
	t.Cleanup(func() { *update = false })
	if got := string(Want(t, path, []byte("first"))); got != "first" {
		t.Fatalf("with -update, Want = %q, want the output just written, %q", got, "first")
	}
	*update = false
	if got := string(Want(t, path, []byte("second"))); got != "first" {
		t.Fatalf("without -update, Want = %q, want the file's contents, %q", got, "first")
	}
}
