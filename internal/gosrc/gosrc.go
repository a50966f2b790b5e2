// Package gosrc parses the Go source of the project for the tests that check
// it by AST (reasons declared once, metrics built through pkg/metricset, the
// reference pages complete, the imports of every file grouped as the
// project's style says: the standard library, other modules, the project;
// every fuzz target run by hack/fuzz.sh).
package gosrc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// Files parses the non-test Go files under the directories dirs of root
// (such as "pkg", "cmd"), leaving out generated code (directories named
// generated) and testdata. It returns them by slash path relative to root.
func Files(root string, dirs ...string) (map[string]*ast.File, error) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && (d.Name() == "generated" || d.Name() == "testdata"):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return fmt.Errorf("parsing %s: %w", path, err)
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = f
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the Go files under %s: %w", dir, err)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go file under %s in %s", strings.Join(dirs, ", "), root)
	}
	return files, nil
}

// Imports returns the names by which f imports each package path: the
// explicit name, or else the last element of the path.
func Imports(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, spec := range f.Imports {
		path := strings.Trim(spec.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		names[name] = path
	}
	return names
}

// Callee returns the import path and the name of the package-level function
// that call calls as pkg.Func, given f's imports (from Imports); ok is false
// for any other call.
func Callee(imports map[string]string, call *ast.CallExpr) (path, name string, ok bool) {
	sel, isSel := call.Fun.(*ast.SelectorExpr)
	if !isSel {
		return "", "", false
	}
	x, isIdent := sel.X.(*ast.Ident)
	if !isIdent {
		return "", "", false
	}
	path, ok = imports[x.Name]
	return path, sel.Sel.Name, ok
}
