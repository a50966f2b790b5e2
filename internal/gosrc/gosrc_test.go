package gosrc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const source = `package p

import (
	"fmt"
	km "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var x = km.NewCounter(nil)

func f(s fmt.Stringer) {
	legacyregistry.MustRegister(x)
	s.String()
	g()
}

func g() {}
`

func TestImportsAndCallee(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", source, 0)
	require.NoError(t, err)
	imports := Imports(f)
	assert.Equal(t, map[string]string{
		"fmt":            "fmt",
		"km":             "k8s.io/component-base/metrics",
		"legacyregistry": "k8s.io/component-base/metrics/legacyregistry",
	}, imports)
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if path, name, ok := Callee(imports, call); ok {
				calls = append(calls, path+"."+name)
			}
		}
		return true
	})
	assert.Equal(t, []string{"k8s.io/component-base/metrics.NewCounter", "k8s.io/component-base/metrics/legacyregistry.MustRegister"}, calls,
		"a method call (s.String) and a local call (g) are not package functions")
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	for path, text := range map[string]string{
		"pkg/a/a.go":               "package a\n",
		"pkg/a/a_test.go":          "package a\n",
		"pkg/a/testdata/x.go":      "package x\n",
		"pkg/generated/g/g.go":     "package g\n",
		"cmd/c/main.go":            "package main\n",
		"other/o.go":               "package o\n",
		"pkg/a/README.md":          "# a\n",
		"pkg/a/internal/b/b.go":    "package b\n",
		"pkg/a/internal/b/b.go.in": "x",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte(text), 0o644))
	}
	files, err := Files(root, "pkg", "cmd")
	require.NoError(t, err)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"pkg/a/a.go", "pkg/a/internal/b/b.go", "cmd/c/main.go"}, names)

	_, err = Files(root, "other/none")
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "other/bad.go"), []byte("package"), 0o644))
	_, err = Files(root, "other")
	assert.Error(t, err)
}
