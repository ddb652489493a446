package unherdvet_test

import (
	"fmt"
	"os"

	"github.com/unherd/unherd/unherdvet"
)

func ExampleCheck() {
	findings, err := unherdvet.Check("", "./testdata/example")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range findings {
		fmt.Println(f.File, f.Line, f.Check)
	}
	_ = unherdvet.WriteJSON(os.Stdout, findings[:0])
	// Output:
	// testdata/example/example.go 15 nojitter
	// []
}
