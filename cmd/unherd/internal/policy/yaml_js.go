//go:build js

package policy

// fromYAML is not built into the page's simulator, which reads its
// policy as JSON (see yaml.go).
func fromYAML([]byte) (*node, *Error) {
	return nil, syntaxError(1, "YAML is not read in this build; write the policy as JSON")
}
