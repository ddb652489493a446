package match

import "go/ast"

// Any reports whether pred holds for root or for a node under it, not
// looking below the nodes for which skip reports true. It asks pred about
// the nodes in the order ast.Inspect visits them, and stops at the first
// for which pred holds. A node that skip reports is still given to pred
// first (a select that pred judges as a whole); only what lies under it
// is left out (the body of a function literal, which runs at another
// time). A search that leaves out nothing is a range over ast.Preorder.
func Any(root ast.Node, skip, pred func(ast.Node) bool) bool {
	found := false
	ast.Inspect(root, func(n ast.Node) bool {
		if found || n == nil {
			return false
		}
		found = pred(n)
		return !found && !skip(n)
	})
	return found
}
