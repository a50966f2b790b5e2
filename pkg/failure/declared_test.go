package failure_test

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/gosrc"
)

// goFiles parses the non-test, non-generated Go files under the project's
// pkg/, cmd/ and internal/.
func goFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	files, err := gosrc.Files("../..", "pkg", "cmd", "internal")
	require.NoError(t, err)
	return files
}

// Every reason is declared once, with its class: no package-level string
// constant named Reason..., and no failure built with a literal reason.
func TestReasonsAreDeclared(t *testing.T) {
	for path, f := range goFiles(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				if n.Tok != token.CONST {
					return true
				}
				for _, spec := range n.Specs {
					vs := spec.(*ast.ValueSpec)
					for _, id := range vs.Names {
						// A typed constant (a metav1.StatusReason) is not a
						// failure's reason.
						if strings.HasPrefix(id.Name, "Reason") && vs.Type == nil {
							t.Errorf("%s: const %s: declare reasons with failure.Declare", path, id.Name)
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) == 0 {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "failure" && (sel.Sel.Name == "New" || sel.Sel.Name == "Quiet") {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						t.Errorf("%s: failure.%s(%s, ...): a reason declared with failure.Declare, not a literal", path, sel.Sel.Name, lit.Value)
					}
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Error" {
					return true
				}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Reason" {
							if _, lit := kv.Value.(*ast.BasicLit); lit {
								t.Errorf("%s: failure.Error{Reason: literal}: declare it with failure.Declare", path)
							}
						}
					}
				}
			}
			return true
		})
	}
}

// No code but pkg/errtext branches on the text of an error or a message:
// strings.Contains (HasPrefix, ...) or a regexp of err.Error(), a message
// or a standard error.
func TestOnlyErrtextReadsErrorText(t *testing.T) {
	matchers := map[string]bool{"Contains": true, "HasPrefix": true, "HasSuffix": true, "Index": true, "EqualFold": true,
		"MatchString": true, "FindStringSubmatch": true, "FindString": true}
	textual := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.CallExpr: // err.Error()
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" && len(e.Args) == 0 {
				return true
			}
		case *ast.SelectorExpr: // status.Message, f.Message
			return e.Sel.Name == "Message"
		case *ast.Ident:
			name := strings.ToLower(e.Name)
			return name == "msg" || name == "message" || name == "stderr" || name == "errmsg" || name == "tail"
		}
		return false
	}
	// Files whose job is to compare a message with an expected one, not to
	// branch on a failure's text.
	comparesMessages := map[string]string{
		"pkg/rulecases/run.go": "a health rule case expects the rules' message (exactly or by a pattern): comparing is what it tests",
	}
	var found []string
	for path, f := range goFiles(t) {
		if strings.HasPrefix(path, "pkg/errtext/") || comparesMessages[path] != "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !matchers[sel.Sel.Name] {
				return true
			}
			for _, a := range call.Args {
				if textual(a) {
					found = append(found, path+": "+sel.Sel.Name)
				}
			}
			return true
		})
	}
	assert.Empty(t, found, "branches on the text of an error: move them to pkg/errtext, with a test against the producer's real error")
}
