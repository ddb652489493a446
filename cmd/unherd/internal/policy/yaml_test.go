//go:build !js

package policy

import (
	"regexp"
	"strconv"
	"testing"
)

// yamlLineRE is the message form yamlLine splits, as a regexp.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// FuzzYAMLLine checks the scanner against the regexp it stands for.
func FuzzYAMLLine(f *testing.F) {
	for _, s := range []string{"", "yaml: line 3: did not find expected key", "yaml: line : x", "yaml: line 12:x", "yaml: line 2: a\nb", "yaml: unmarshal errors", "yaml: line 99999999999999999999: big"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, msg, ok := yamlLine(s)
		m := yamlLineRE.FindStringSubmatch(s)
		if m == nil {
			if ok {
				t.Errorf("yamlLine(%q) = %d, %q; the regexp does not match", s, line, msg)
			}
			return
		}
		want, err := strconv.Atoi(m[1])
		if err != nil {
			if ok {
				t.Errorf("yamlLine(%q) = %d; the line does not fit an int", s, line)
			}
			return
		}
		if !ok || line != want || msg != m[2] {
			t.Errorf("yamlLine(%q) = %d, %q, %v; want %d, %q", s, line, msg, ok, want, m[2])
		}
	})
}
