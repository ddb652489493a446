package unherdvet

import (
	"fmt"
	"go/ast"
	"go/token"
)

// MaxNesting is how deeply the blocks of a file may nest (function
// bodies, loop and branch bodies, function literals) for unherd vet to
// check it. Hand-written code stays far below it; a file that goes
// deeper is not type-checked or analysed, and its package is reported as
// one that could not be checked, so that generated or hostile code cannot
// make the checks run for hours.
const MaxNesting = 200

// nestingError says that a file nests deeper than MaxNesting.
type nestingError struct {
	pos token.Position
}

func (e *nestingError) msg() string {
	return fmt.Sprintf("blocks nest more than %d deep; unherd vet does not check code nested this deeply", MaxNesting)
}

func (e *nestingError) Error() string { return e.pos.String() + ": " + e.msg() }

// tooDeep reports the first block of f that nests deeper than limit
// blocks, and false, or true when there is none.
func tooDeep(f *ast.File, limit int) (token.Pos, bool) {
	var (
		stack []ast.Node
		depth int
		at    token.Pos
	)
	ast.Inspect(f, func(n ast.Node) bool {
		if at.IsValid() {
			return false
		}
		if n == nil {
			if _, ok := stack[len(stack)-1].(*ast.BlockStmt); ok {
				depth--
			}
			stack = stack[:len(stack)-1]
			return true
		}
		if _, ok := n.(*ast.BlockStmt); ok {
			depth++
			if depth > limit {
				at = n.Pos()
				return false
			}
		}
		stack = append(stack, n)
		return true
	})
	return at, !at.IsValid()
}
