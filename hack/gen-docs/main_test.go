package main

import (
	"context"
	"go/ast"
	"go/token"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kumodo/convoy-apiserver/cmd/convoy-apiserver/app"
	plugin "github.com/kumodo/convoy-apiserver/cmd/kubectl-convoy/cmd"
	"github.com/kumodo/convoy-apiserver/internal/gosrc"
	"github.com/kumodo/convoy-apiserver/pkg/apiserver"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/metricset"
)

// stable sets the environment the pages are generated in, as run does.
func stable(t *testing.T) {
	t.Helper()
	for k, v := range stableEnv {
		t.Setenv(k, v)
	}
}

// module is the import path of the project.
const module = "github.com/kumodo/convoy-apiserver"

// Every reason of the project's code is on the reasons page: the generator
// links every package that calls failure.Declare, and every reason named by
// a literal there is on the page.
func TestReasonsPageComplete(t *testing.T) {
	files, err := gosrc.Files("../..", "apis", "pkg", "cmd", "internal", "hack")
	require.NoError(t, err)
	page := ReasonsPage(failure.Reasons())
	linked := reachable(files, "hack/gen-docs")
	declaring := 0
	for path, f := range files {
		imports := gosrc.Imports(f)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			pkg, name, ok := gosrc.Callee(imports, call)
			if id, isIdent := call.Fun.(*ast.Ident); isIdent && strings.HasPrefix(path, "pkg/failure/") {
				ok, pkg, name = true, module+"/pkg/failure", id.Name
			}
			if !ok || pkg != module+"/pkg/failure" || name != "Declare" {
				return true
			}
			declaring++
			assert.True(t, linked[pathpkg.Dir(path)], "%s declares a reason, but hack/gen-docs does not link its package", path)
			if reason := nameOf(call.Args[0]); reason != "" {
				assert.Contains(t, page, "\n## "+reason+"\n", "reason %s of %s is not on the page", reason, path)
			}
			return true
		})
	}
	assert.Greater(t, declaring, 10)
	for _, r := range failure.Reasons() {
		assert.Contains(t, page, "\n## "+r.Name+"\n")
	}
}

// reachable returns the directories of the project's packages that the
// package in dir imports, itself included, directly or not.
func reachable(files map[string]*ast.File, dir string) map[string]bool {
	imports := map[string][]string{}
	for path, f := range files {
		for _, p := range gosrc.Imports(f) {
			if rel, ok := strings.CutPrefix(p, module+"/"); ok {
				imports[pathpkg.Dir(path)] = append(imports[pathpkg.Dir(path)], rel)
			}
		}
	}
	seen := map[string]bool{}
	var visit func(string)
	visit = func(d string) {
		if seen[d] {
			return
		}
		seen[d] = true
		for _, next := range imports[d] {
			visit(next)
		}
	}
	visit(dir)
	return seen
}

// nameOf returns the Name of a failure.Reason literal, or "".
func nameOf(e ast.Expr) string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
			if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.STRING {
				s, err := strconv.Unquote(v.Value)
				if err == nil {
					return s
				}
			}
		}
	}
	return ""
}

// After the server's registration, every metric it registers is on the
// metrics page, with its type and labels, and every metric on the page is
// registered: a metric declared but not registered, or registered beside
// pkg/metricset, fails.
func TestMetricsPageComplete(t *testing.T) {
	apiserver.RegisterMetrics()
	all := metricset.All()
	page := MetricsPage(all, metricset.Libraries)
	declared := map[string]bool{}
	for _, m := range all {
		declared[m.Name] = true
		row := "| " + code(m.Name) + " | " + string(m.Type) + " | " + strings.Join(m.Labels, ", ") + " | "
		assert.Contains(t, page, row, "the row of %s", m.Name)
		// Registering another metric of that name fails when the server
		// registered one.
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: m.Name, Help: "probe"})
		if err := legacyregistry.Registerer().Register(probe); err == nil {
			legacyregistry.Registerer().Unregister(probe)
			t.Errorf("%s is declared but apiserver.RegisterMetrics does not register it", m.Name)
		}
	}
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, families)
	for _, f := range families {
		if _, library := metricset.LibraryOf(f.GetName()); !library {
			assert.True(t, declared[f.GetName()], "%s is registered but neither declared in a metricset.Set nor of a library on the page", f.GetName())
		}
	}
	for _, l := range metricset.Libraries {
		assert.Contains(t, page, "| "+code(l.Prefix)+" | ")
	}
}

// flagRow matches a row of the flags page: the flag, its type and default.
var flagRow = regexp.MustCompile("^\\| `(?:-[^ ]+, )?--([^`]+)` \\| ([^|]+) \\| `?([^`|]*)`? \\|")

// rows returns the flags of the page's rows under each heading, as "type
// default" by name.
func rows(page string) map[string]map[string]string {
	out := map[string]map[string]string{}
	heading := ""
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			out[heading] = map[string]string{}
		}
		if m := flagRow.FindStringSubmatch(line); m != nil {
			out[heading][m[1]] = m[2] + " " + m[3]
		}
	}
	return out
}

// Every flag of the server's command and of each command of the plugin is
// on the flags page with its type and default: the server's under one of
// its named sets, the plugin's under the command or the global flags.
func TestFlagsPageComplete(t *testing.T) {
	stable(t)
	sections := rows(FlagsPage())
	find := func(name string, in ...string) (string, bool) {
		for _, s := range in {
			if row, ok := sections[s][name]; ok {
				return row, true
			}
		}
		return "", false
	}
	want := func(f *pflag.Flag) string { return f.Value.Type() + " " + defaultOf(f) }

	var serverSets []string
	for _, name := range app.NewOptions().Flags().Order {
		serverSets = append(serverSets, name)
	}
	server := app.NewCommand(context.Background())
	n := 0
	server.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		row, ok := find(f.Name, serverSets...)
		if assert.True(t, ok, "convoy-apiserver --%s is not on the page", f.Name) {
			assert.Equal(t, want(f), row, "--%s", f.Name)
		}
	})
	assert.Greater(t, n, 50)

	root := plugin.NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		_, ok := sections[c.CommandPath()]
		assert.True(t, ok, "%s has no section", c.CommandPath())
		check := func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			row, ok := find(f.Name, c.CommandPath(), root.CommandPath())
			if assert.True(t, ok, "%s --%s is not on the page", c.CommandPath(), f.Name) {
				assert.Equal(t, want(f), row, "%s --%s", c.CommandPath(), f.Name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.Contains(t, sections, "kubectl convoy release health")
}

// The pages do not depend on the machine: not on the home directory or
// KUBECACHEDIR, and two runs write the same.
func TestPagesStable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECACHEDIR", filepath.Join(home, "cache"))
	first, second := t.TempDir(), t.TempDir()
	require.NoError(t, run(first))
	require.NoError(t, run(second))
	for _, name := range []string{"flags.md", "reasons.md", "metrics.md"} {
		a, err := os.ReadFile(filepath.Join(first, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(second, name))
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), name)
		assert.True(t, strings.HasPrefix(string(a), "<!-- Generated by hack/gen-docs"), name)
		assert.NotContains(t, string(a), home, name)
	}
	flags, err := os.ReadFile(filepath.Join(first, "flags.md"))
	require.NoError(t, err)
	assert.Contains(t, string(flags), "| `--cache-dir` | string | `$HOME/.kube/cache` |")
}

func TestCell(t *testing.T) {
	for _, tc := range []struct{ in, cell, code string }{
		{"plain", "plain", "`plain`"},
		{"a|b", `a\|b`, "`a\\|b`"},
		{"line\nnext", "line<br>next", "`line next`"},
		{"<none>", "&lt;none&gt;", "`<none>`"},
		{"  trimmed ", "trimmed", "`  trimmed `"},
		{"a `b`", "a `b`", "`` a `b` ``"},
		{"", "", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.cell, cell(tc.in))
			assert.Equal(t, tc.code, code(tc.in))
		})
	}
}
