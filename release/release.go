package release

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// Module is one module of the repository.
type Module struct {
	// Dir is the module's directory relative to the repository's root,
	// with slashes; "" for the root module.
	Dir string
	// Path is the module path from its go.mod.
	Path string
	// Requires lists the module paths of the repository that its go.mod
	// requires.
	Requires []string
}

// Tag returns the name of the module's tag for version: version itself
// for the root module, Dir/version for a nested one.
func (m Module) Tag(version string) string {
	if m.Dir == "" {
		return version
	}
	return m.Dir + "/" + version
}

// ErrNotClean is returned by Prepare when the repository has changes to
// tracked files that are not committed.
var ErrNotClean = errors.New("release: the repository has uncommitted changes; commit or stash them first")

// Modules lists the modules tracked by git in the repository at repo,
// the root first, then by directory.
func Modules(repo string) ([]Module, error) {
	out, err := git(repo, "ls-files", "-z", "--", "go.mod", "*/go.mod")
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, f := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		mf, err := modfile.ParseLax(f, data, nil)
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		if mf.Module == nil {
			return nil, fmt.Errorf("release: %s has no module line", f)
		}
		dir := path.Dir(f)
		if dir == "." {
			dir = ""
		}
		mods = append(mods, Module{Dir: dir, Path: mf.Module.Mod.Path})
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("release: no go.mod tracked in %s", repo)
	}
	paths := map[string]bool{}
	for _, m := range mods {
		paths[m.Path] = true
	}
	for i, m := range mods {
		mf, err := readModFile(repo, m)
		if err != nil {
			return nil, err
		}
		for _, r := range mf.Require {
			if paths[r.Mod.Path] {
				mods[i].Requires = append(mods[i].Requires, r.Mod.Path)
			}
		}
		slices.Sort(mods[i].Requires)
	}
	slices.SortFunc(mods, func(a, b Module) int { return cmp.Compare(a.Dir, b.Dir) })
	return mods, nil
}

func readModFile(repo string, m Module) (*modfile.File, error) {
	name := filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	mf, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return mf, nil
}

// Prepare cuts release version (a semantic version such as v0.1.0) of
// every module of the git repository at repo: it sets every requirement on
// a module of the repository to version, writes the go.sum lines those
// requirements need, commits the result as one commit ("release
// version") when anything changed, and tags every module at that commit
// (see Module.Tag). It commits with git's configured identity and pushes
// nothing. The tracked files must be committed (ErrNotClean otherwise) and
// no tag of the release may exist yet.
func Prepare(repo, version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("release: %q is not a canonical semantic version such as v0.1.0", version)
	}
	if out, err := git(repo, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if out != "" {
		return fmt.Errorf("%w:\n%s", ErrNotClean, out)
	}
	mods, err := Modules(repo)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if _, err := git(repo, "rev-parse", "--verify", "--quiet", "refs/tags/"+m.Tag(version)); err == nil {
			return fmt.Errorf("release: tag %s exists already; a version is released once", m.Tag(version))
		}
	}
	levels, err := levels(mods)
	if err != nil {
		return err
	}
	base, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	base = strings.TrimSpace(base)

	// Requirements first: they are part of each module's content.
	for _, m := range mods {
		if err := setRequires(repo, m, version); err != nil {
			return err
		}
	}
	if err := setWorkReplaces(repo, mods, version); err != nil {
		return err
	}
	if err := commit(repo, "release "+version+": requirements"); err != nil {
		return err
	}
	// Then go.sum, level by level: a module's lines need the hashes of the
	// modules it depends on, which are final once their level is committed.
	sums := map[string][2]string{} // module path -> zip and go.mod hashes
	byPath := map[string]Module{}
	for _, m := range mods {
		byPath[m.Path] = m
	}
	for i, level := range levels {
		if i > 0 {
			for _, m := range level {
				if err := writeSums(repo, m, version, closure(m, byPath), sums); err != nil {
					return err
				}
			}
			if err := commit(repo, fmt.Sprintf("release %s: go.sum, level %d", version, i)); err != nil {
				return err
			}
		}
		for _, m := range level {
			h, err := hashes(repo, "HEAD", m, version)
			if err != nil {
				return err
			}
			sums[m.Path] = h
		}
	}
	// One commit for the release: the content, not the commits, is what
	// was hashed.
	head, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if strings.TrimSpace(head) != base {
		if _, err := git(repo, "reset", "--soft", base); err != nil {
			return err
		}
		if _, err := git(repo, "commit", "--quiet", "--no-verify", "-m", "release "+version); err != nil {
			return err
		}
	}
	for _, m := range mods {
		if _, err := git(repo, "tag", m.Tag(version)); err != nil {
			return err
		}
	}
	return nil
}

// levels orders the modules so that each comes after every module of the
// repository it requires: level 0 requires none.
func levels(mods []Module) ([][]Module, error) {
	level := map[string]int{}
	var visit func(m Module, seen map[string]bool) (int, error)
	byPath := map[string]Module{}
	for _, m := range mods {
		byPath[m.Path] = m
	}
	visit = func(m Module, seen map[string]bool) (int, error) {
		if l, ok := level[m.Path]; ok {
			return l, nil
		}
		if seen[m.Path] {
			return 0, fmt.Errorf("release: the modules' requirements form a cycle through %s", m.Path)
		}
		seen[m.Path] = true
		l := 0
		for _, r := range m.Requires {
			rl, err := visit(byPath[r], seen)
			if err != nil {
				return 0, err
			}
			l = max(l, rl+1)
		}
		level[m.Path] = l
		return l, nil
	}
	var out [][]Module
	for _, m := range mods {
		l, err := visit(m, map[string]bool{})
		if err != nil {
			return nil, err
		}
		for len(out) <= l {
			out = append(out, nil)
		}
		out[l] = append(out[l], m)
	}
	return out, nil
}

// closure returns the paths of the repository's modules that m requires,
// directly or not, sorted.
func closure(m Module, byPath map[string]Module) []string {
	seen := map[string]bool{}
	var walk func(Module)
	walk = func(m Module) {
		for _, r := range m.Requires {
			if !seen[r] {
				seen[r] = true
				walk(byPath[r])
			}
		}
	}
	walk(m)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func setRequires(repo string, m Module, version string) error {
	if len(m.Requires) == 0 {
		return nil
	}
	mf, err := readModFile(repo, m)
	if err != nil {
		return err
	}
	for _, r := range m.Requires {
		if err := mf.AddRequire(r, version); err != nil {
			return fmt.Errorf("release: %s: %w", m.Path, err)
		}
	}
	mf.Cleanup()
	data, err := mf.Format()
	if err != nil {
		return fmt.Errorf("release: %s: %w", m.Path, err)
	}
	return os.WriteFile(filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod"), data, 0o644)
}

// setWorkReplaces points the go.work file's replacements of the
// repository's modules, which map the version they require to the
// directory beside them, at version.
func setWorkReplaces(repo string, mods []Module, version string) error {
	name := filepath.Join(repo, "go.work")
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	wf, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.Path] = true
	}
	for _, r := range slices.Clone(wf.Replace) {
		if !ours[r.Old.Path] || r.Old.Version == "" || r.Old.Version == version {
			continue
		}
		if err := wf.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return fmt.Errorf("release: go.work: %w", err)
		}
		if err := wf.AddReplace(r.Old.Path, version, r.New.Path, r.New.Version); err != nil {
			return fmt.Errorf("release: go.work: %w", err)
		}
	}
	wf.Cleanup()
	return os.WriteFile(name, modfile.Format(wf.Syntax), 0o644)
}

// writeSums replaces m's go.sum lines for the modules deps (of the
// repository) with their hashes at version.
func writeSums(repo string, m Module, version string, deps []string, sums map[string][2]string) error {
	name := filepath.Join(repo, filepath.FromSlash(m.Dir), "go.sum")
	old, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release: %w", err)
	}
	drop := map[string]bool{}
	for _, d := range deps {
		drop[d] = true
	}
	var lines []string
	for _, l := range strings.Split(string(old), "\n") {
		if f := strings.Fields(l); len(f) == 0 || drop[f[0]] {
			continue
		}
		lines = append(lines, l)
	}
	for _, d := range deps {
		h, ok := sums[d]
		if !ok {
			return fmt.Errorf("release: no hash for %s, which %s requires", d, m.Path)
		}
		lines = append(lines, d+" "+version+" "+h[0], d+" "+version+"/go.mod "+h[1])
	}
	slices.Sort(lines)
	return os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// hashes returns the go.sum hashes of m's zip and go.mod at version, made
// from the git revision rev.
func hashes(repo, rev string, m Module, version string) ([2]string, error) {
	f, err := os.CreateTemp("", "release-*.zip")
	if err != nil {
		return [2]string{}, fmt.Errorf("release: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := zip.CreateFromVCS(f, module.Version{Path: m.Path, Version: version}, repo, rev, m.Dir); err != nil {
		return [2]string{}, fmt.Errorf("release: zip of %s: %w", m.Path, err)
	}
	if err := f.Close(); err != nil {
		return [2]string{}, fmt.Errorf("release: %w", err)
	}
	zh, err := dirhash.HashZip(f.Name(), dirhash.Hash1)
	if err != nil {
		return [2]string{}, fmt.Errorf("release: %w", err)
	}
	gomod, err := git(repo, "show", rev+":"+joinDir(m.Dir, "go.mod"))
	if err != nil {
		return [2]string{}, err
	}
	mh, err := modHash(gomod)
	if err != nil {
		return [2]string{}, err
	}
	return [2]string{zh, mh}, nil
}

// modHash is the hash go.sum records for a go.mod file's content.
func modHash(gomod string) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(gomod)), nil
	})
}

func commit(repo, msg string) error {
	if _, err := git(repo, "add", "--update"); err != nil {
		return err
	}
	if _, err := git(repo, "diff", "--cached", "--quiet"); err == nil {
		return nil // nothing changed
	}
	_, err := git(repo, "commit", "--quiet", "--no-verify", "-m", msg)
	return err
}

func git(repo string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("release: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
