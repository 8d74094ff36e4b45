package testcases_test

import (
	"fmt"

	"github.com/verl-score/verl-score/testcases"
)

func ExampleParse() {
	raw := []byte(`"{\"inputs\": [[1, \"a\"], \"2 3\\n\", null], \"outputs\": [1e-05, \"5\\n\", null]}"`)
	set, err := testcases.Parse(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range set.Cases {
		fmt.Printf("stdin given: %v, input %q, expected %q\n", c.Stdin != nil, c.Input, c.ExpectedText)
	}
	// Output:
	// stdin given: true, input "[1, 'a']", expected "1e-05"
	// stdin given: true, input "2 3\n", expected "5\n"
	// stdin given: false, input "None", expected "None"
}

func ExampleExtract() {
	code, lang, ok := testcases.Extract("Solution:\n```cpp\nint main() {}\n```\n", testcases.RuleVerl)
	fmt.Printf("%q %q %v\n", code, lang, ok)
	// Output:
	// "int main() {}\n" "cpp" true
}
