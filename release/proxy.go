package release

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// WriteProxy writes every module of the repository at repo at the tagged
// version into dir in the layout the go command reads from GOPROXY
// (file://dir): for each module, @v/list, and the version's .info, .mod
// and .zip, the zip made from the module's tag as a public proxy makes it
// from the repository. Versions already in dir are kept, so a proxy can
// hold several releases.
func WriteProxy(repo, version, dir string) error {
	mods, err := Modules(repo)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := writeModule(repo, m, version, dir); err != nil {
			return err
		}
	}
	return nil
}

func writeModule(repo string, m Module, version, dir string) error {
	tag := m.Tag(version)
	if _, err := git(repo, "rev-parse", "--verify", "--quiet", "refs/tags/"+tag); err != nil {
		return fmt.Errorf("release: no tag %s for %s; cut the release first: %w", tag, m.Path, err)
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	base := filepath.Join(vdir, escVer)

	gomod, err := git(repo, "show", tag+":"+joinDir(m.Dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	when, err := git(repo, "log", "-1", "--format=%cI", tag)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(when))
	if err != nil {
		return fmt.Errorf("release: commit time of %s: %w", tag, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t.UTC()})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	f, err := os.Create(base + ".zip")
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := zip.CreateFromVCS(f, module.Version{Path: m.Path, Version: version}, repo, tag, m.Dir); err != nil {
		f.Close()
		return fmt.Errorf("release: zip of %s: %w", m.Path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

func joinDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// addToList adds version to a proxy's @v/list file once.
func addToList(name, version string) error {
	old, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("release: %w", err)
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(name, append(old, version+"\n"...), 0o644)
}
