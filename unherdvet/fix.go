package unherdvet

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"os"
	"slices"
	"sort"
)

// ApplyFixes applies the suggested fixes of findings to their files and
// formats the files it changed. A fix is applied whole or not at all: one
// whose edits overlap those of a fix applied before it in the same file
// (other than by the very same edit, such as the same import) is left
// out. It returns the findings whose fixes it applied and the files it
// wrote; a file that cannot be read, whose edited text does not parse, or
// that cannot be written is left as it was and its error is joined in
// the error.
func ApplyFixes(findings []Finding) (applied []Finding, files []string, err error) {
	byFile := make(map[string][]int) // file -> indexes of findings with edits in it
	for i, f := range findings {
		seen := map[string]bool{}
		for _, e := range f.Fix {
			if !seen[e.File] {
				seen[e.File] = true
				byFile[e.File] = append(byFile[e.File], i)
			}
		}
	}
	names := make([]string, 0, len(byFile))
	for name := range byFile {
		names = append(names, name)
	}
	sort.Strings(names)
	ok := make(map[int]bool) // findings whose edits all went in
	failed := make(map[int]bool)
	var errs []error
	for _, name := range names {
		src, rerr := os.ReadFile(name)
		if rerr != nil {
			errs = append(errs, fmt.Errorf("unherdvet: reading %s to fix it: %w", name, rerr))
			for _, i := range byFile[name] {
				failed[i] = true
			}
			continue
		}
		var chosen []Edit
		var took []int
		for _, i := range byFile[name] {
			mine := fileEdits(findings[i].Fix, name)
			if fits(chosen, mine, len(src)) {
				chosen = append(chosen, mine...)
				took = append(took, i)
			} else {
				failed[i] = true
			}
		}
		out, aerr := apply(src, chosen)
		if aerr == nil {
			out, aerr = format.Source(out)
		}
		if aerr == nil {
			aerr = os.WriteFile(name, out, 0o666)
		}
		if aerr != nil {
			errs = append(errs, fmt.Errorf("unherdvet: fixing %s: %w; the file is unchanged", name, aerr))
			for _, i := range took {
				failed[i] = true
			}
			continue
		}
		files = append(files, name)
		for _, i := range took {
			ok[i] = true
		}
	}
	for i, f := range findings {
		if ok[i] && !failed[i] {
			applied = append(applied, f)
		}
	}
	return applied, files, errors.Join(errs...)
}

func fileEdits(edits []Edit, name string) []Edit {
	var out []Edit
	for _, e := range edits {
		if e.File == name {
			out = append(out, e)
		}
	}
	return out
}

// fits reports whether edits can join chosen: each lies within the file
// and overlaps no chosen edit, unless it is the same edit.
func fits(chosen, edits []Edit, size int) bool {
	for _, e := range edits {
		if e.Start < 0 || e.End < e.Start || e.End > size {
			return false
		}
		for _, c := range chosen {
			if c == e {
				continue
			}
			if e.Start < c.End && c.Start < e.End || (e.Start == e.End && e.Start == c.Start) || (c.Start == c.End && c.Start == e.Start) {
				return false
			}
		}
	}
	return true
}

// apply applies non-overlapping edits to src, dropping duplicates.
func apply(src []byte, edits []Edit) ([]byte, error) {
	edits = slices.Clone(edits)
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].Start < edits[j].Start })
	edits = slices.Compact(edits)
	var b bytes.Buffer
	last := 0
	for _, e := range edits {
		if e.Start < last {
			return nil, fmt.Errorf("overlapping edits at byte %d", e.Start)
		}
		b.Write(src[last:e.Start])
		b.WriteString(e.New)
		last = e.End
	}
	b.Write(src[last:])
	return b.Bytes(), nil
}
