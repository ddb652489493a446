package main

import (
	"bytes"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: --version prints the module version and the VCS revision
// the build recorded, and says so when it recorded none.
func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want []string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "v0.1.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "9ba4930abc"}, {Key: "vcs.time", Value: "2026-12-02T13:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"unherd v0.1.0", "revision 9ba4930abc of 2026-12-02T13:00:00Z", "uncommitted changes", "go1.25.1"}},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, []string{"unherd (devel)", "no VCS revision"}},
	} {
		for _, arg := range []string{"--version", "-version", "version"} {
			var out, errb bytes.Buffer
			e := fakeEnv(&out, &errb)
			e.buildInfo = func() (*debug.BuildInfo, bool) { return tc.bi, true }
			if code := runContext(t.Context(), e, []string{arg}); code != exitOK {
				t.Fatalf("%s %s: exit %d: %s", tc.name, arg, code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("%s %s: %q lacks %q", tc.name, arg, out.String(), w)
				}
			}
		}
	}
}

// flagNames lists the flags a command's -h output describes.
func flagNames(t *testing.T, help string) []string {
	t.Helper()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\w+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("no flags in:\n%s", help)
	}
	return names
}

// TestUsageListsEveryFlag: the top-level help lists every flag each
// command's own -h describes, and demo -h is help, not a mistake.
func TestUsageListsEveryFlag(t *testing.T) {
	var top, errb bytes.Buffer
	if code := run([]string{"help"}, &top, &errb); code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, args := range [][]string{{"report", "-h"}, {"whatif", "-h"}, {"demo", "-h"}, {"demo", "payments", "-h"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitOK {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitOK, errb.String())
			continue
		}
		line := regexp.MustCompile(`(?m)^  unherd ` + args[0] + ` .*$`).FindString(top.String())
		for _, f := range flagNames(t, out.String()) {
			if !strings.Contains(line, "--"+f+" ") && !strings.Contains(line, "--"+f+"]") {
				t.Errorf("the help's line %q lacks --%s, which '%s' describes", line, f, strings.Join(args, " "))
			}
		}
	}
}

// TestWhatIfExplainsAmplification: the text says what amplification
// counts, since it can exceed the policy's attempt cap.
func TestWhatIfExplainsAmplification(t *testing.T) {
	var out, errb bytes.Buffer
	e := fakeEnv(&out, &errb)
	e.stdin = strings.NewReader("attempts: 3\n")
	if code := runContext(t.Context(), e, []string{"whatif", "--policy", "-", "--quiet"}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "can exceed the\nattempt cap") && !strings.Contains(out.String(), "exceed the attempt cap") {
		t.Errorf("the what-if text does not explain amplification:\n%s", out.String())
	}
}
