//go:build linux

package sandbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The sandbox is in parts (issue #25): the root package holds at most
// 1,300 statements, declarations and keyed fields in its non-test code
// (counted in the syntax tree, so that breaking long lines counts for
// nothing; 1,500 lines was the bound when lines ran to any length),
// Local has at most 15 methods, and no part imports the root.
func TestSandboxIsInParts(t *testing.T) {
	const root = "github.com/verl-score/verl-score/sandbox"
	fset := token.NewFileSet()
	nodes, methods := 0, 0
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(x ast.Node) bool {
			switch x.(type) {
			case ast.Stmt, ast.Spec, *ast.FuncDecl, *ast.KeyValueExpr:
				nodes++
			}
			return true
		})
		if f == "other.go" { // the stand-in where there is no Linux
			continue
		}
		for _, d := range af.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.Name == "Local" {
						methods++
					}
				}
			}
		}
	}
	if nodes > 1300 {
		t.Errorf("the root package has %d statements, declarations and keyed fields, want at most 1300", nodes)
	}
	if methods > 15 {
		t.Errorf("*Local has %d methods, want at most 15", methods)
	}
	parts, _ := filepath.Glob("*/*.go")
	if len(parts) == 0 {
		t.Fatal("no parts found")
	}
	for _, f := range parts {
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == root {
				t.Errorf("%s imports the root package", f)
			}
		}
	}
}
