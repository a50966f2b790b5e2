package diffreport

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// changed is a Changed entry of name whose printed diff has lines lines.
func changed(name string, lines int) Entry {
	e := Classify(Release{Namespace: "shop", Name: name, Cluster: InCluster}, diffOf(subresourcesv1alpha1.DiffDrifted, "b", 1, false, false), nil)
	var b strings.Builder
	fmt.Fprintf(&b, "Release shop/%s, render b (Revision): Drifted\n", name)
	for i := range lines - 1 {
		fmt.Fprintf(&b, "+line %d of %s\n", i, name)
	}
	e.Text = b.String()
	return e
}

func TestMarkdownWhole(t *testing.T) {
	e := changed("web", 3)
	r := New("refs/pull/7/head", "git@git.example:org/apps", false, []Entry{
		e,
		Classify(Release{Namespace: "shop", Name: "api", Cluster: "eu-1"}, diffOf(subresourcesv1alpha1.DiffInSync, "a", 0, false, false), nil),
		Failure(Release{Namespace: "ads", Name: "web", Cluster: InCluster}, errors.New("no revision refs/pull/7/head: <b>|`x`|</b>")),
	})
	md, err := r.Markdown(DefaultReportBytes)
	require.NoError(t, err)
	assert.Equal(t, "### kubectl convoy diff --revision `refs/pull/7/head`\n\n"+
		"1 changed, 1 unchanged, 1 error, 0 skipped: the Releases of `git@git.example:org/apps`.\n\n"+
		"| Release | Cluster | Result | Changed | Added | Pruned | Fields |\n"+
		"| --- | --- | --- | ---: | ---: | ---: | ---: |\n"+
		"| ads/web | in-cluster | **Error (RequestFailed)** | | | | |\n"+
		"| shop/api | eu-1 | Unchanged | 0 | 0 | 0 | 0 |\n"+
		"| shop/web | in-cluster | **Changed** | 1 | 0 | 0 | 1 |\n\n"+
		"<details><summary>ads/web: Error (RequestFailed)</summary>\n\n"+
		"```text\nno revision refs/pull/7/head: <b>|`x`|</b>\n```\n\n</details>\n\n"+
		"<details><summary>shop/web: 1 changed, 0 added, 0 pruned, 1 field</summary>\n\n"+
		"```diff\nRelease shop/web, render b (Revision): Drifted\n+line 0 of web\n+line 1 of web\n```\n\n</details>\n\n", md)
	assertWellFormed(t, md)
}

func TestMarkdownChangedOnly(t *testing.T) {
	r := New("abc", "", true, []Entry{
		changed("web", 2),
		Classify(Release{Namespace: "shop", Name: "api", Cluster: InCluster}, diffOf(subresourcesv1alpha1.DiffDrifted, "a", 1, false, false), &Current{RenderRef: "a"}),
	})
	md, err := r.Markdown(DefaultReportBytes)
	require.NoError(t, err)
	assert.Contains(t, md, "1 changed, 1 unchanged, 0 errors, 0 skipped.\n\n1 Release renders the same at the revision as now: not listed (--changed-only).\n")
	assert.NotContains(t, md, "shop/api")
	assert.Contains(t, md, "| shop/web |")

	none, err := New("abc", "https://git.example/org/apps", false, nil).Markdown(MinReportBytes)
	require.NoError(t, err)
	assert.Equal(t, "### kubectl convoy diff --revision `abc`\n\n0 changed, 0 unchanged, 0 errors, 0 skipped: the Releases of `https://git.example/org/apps`.\n\nNo Release was selected.\n\n", none)
}

func TestMarkdownFences(t *testing.T) {
	e := changed("web", 2)
	e.Text += "+```\n+````go\n"
	md, err := New("a`b", "", false, []Entry{e}).Markdown(DefaultReportBytes)
	require.NoError(t, err)
	assert.Contains(t, md, "--revision ``a`b``\n")
	assert.Contains(t, md, "`````diff\n", "a fence longer than any run of backticks in the diff")
	assertWellFormed(t, md)
}

func TestMarkdownCut(t *testing.T) {
	entries := []Entry{changed("a", 40), changed("b", 400), changed("c", 10), changed("d", 5)}
	// A name too long to list, a diff with backticks and a long line.
	long := changed(strings.Repeat("x", 250), 3)
	long.Text += "+```\n+" + strings.Repeat("é", 3000) + "\n"
	entries = append(entries, long, Failure(Release{Namespace: "shop", Name: "e", Cluster: InCluster}, errors.New(strings.Repeat("bad ", 400))))
	r := New("refs/pull/7/head", "", false, entries)
	whole, err := r.Markdown(1 << 20)
	require.NoError(t, err)

	longName := "`shop/" + strings.Repeat("x", 250) + "`"
	tests := []struct {
		limit     int
		truncated string   // the Release whose details are truncated
		leftOut   []string // the Releases whose details are left out
	}{
		{limit: len(whole)},
		{limit: 12000, leftOut: []string{longName}},
		{limit: 9000, truncated: "`shop/b`", leftOut: []string{"`shop/c`", "`shop/d`", "`shop/e`", longName}},
		{limit: 1500, truncated: "`shop/a`", leftOut: []string{"`shop/b`", "`shop/c`", "`shop/d`", "`shop/e`", "and 1 more"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			md, err := r.Markdown(tt.limit)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(md), tt.limit)
			assertWellFormed(t, md)
			if tt.leftOut == nil {
				assert.Equal(t, whole, md)
				return
			}
			assert.Contains(t, md, "| shop/e | in-cluster | **Error (RequestFailed)** |", "the table is whole")
			notice := md[strings.Index(md, "---\n\n**Cut to fit"):]
			want := fmt.Sprintf("---\n\n**Cut to fit %d bytes.**", tt.limit)
			if tt.truncated != "" {
				assert.Regexp(t, `\*Cut to fit: \d+ of \d+ lines shown\.\*\n\n</details>`, md)
				want += " Truncated: the details of " + tt.truncated + "."
			} else {
				assert.NotContains(t, md, "lines shown")
			}
			want += " Left out: the details of " + strings.Replace(strings.Join(tt.leftOut, ", "), ", and", " and", 1)
			assert.Equal(t, want+". All of it: `-o table` or `-o json`.\n", notice)
			for _, name := range tt.leftOut {
				assert.NotContains(t, md, "<summary>"+strings.Trim(name, "`")+":", "left out")
			}
		})
	}

	// Every size from the least up: within the limit, well formed, and
	// saying it was cut whenever it was.
	for limit := MinReportBytes; limit <= len(whole); limit += 97 {
		md, err := r.Markdown(limit)
		require.NoError(t, err)
		require.LessOrEqual(t, len(md), limit)
		assertWellFormed(t, md)
		if len(md) < len(whole) {
			require.Contains(t, md, "**Cut to fit", "limit %d", limit)
		}
	}
}

func TestMarkdownCutTable(t *testing.T) {
	var entries []Entry
	for i := range 300 {
		entries = append(entries, changed(fmt.Sprintf("web-%03d", i), 3))
	}
	md, err := New("main", "", false, entries).Markdown(4096)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(md), 4096)
	assertWellFormed(t, md)
	assert.NotContains(t, md, "<details>")
	shown := strings.Count(md, "| **Changed** |")
	assert.Greater(t, shown, 10)
	assert.Contains(t, md, fmt.Sprintf("**Cut to fit 4096 bytes.** Left out of the table: %d Releases, and every Release's details. All of it:", 300-shown))

	_, err = New("main", "", false, entries).Markdown(MinReportBytes - 1)
	assert.ErrorContains(t, err, "at least 1024 bytes")
}

func TestNameList(t *testing.T) {
	tests := []struct {
		names []string
		room  int
		want  string
	}{
		{[]string{"a/b"}, 100, "`a/b`"},
		{[]string{"a/b", "c/d", "e/f"}, 100, "`a/b`, `c/d`, `e/f`"},
		{[]string{"a/b", "c/d", "e/f"}, 20, "`a/b` and 2 more"},
		{[]string{"a/b", "c/d", "e/f"}, 5, "3 Releases"},
		{[]string{"a/b"}, 3, "1 Release"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, nameList(tt.names, tt.room), "%v in %d", tt.names, tt.room)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	assert.Equal(t, `a\|b \<i\> c\_d \@e`, mdCell("a|b <i>\n c_d @e"))
	assert.Equal(t, "`main`", codeSpan("main"))
	assert.Equal(t, "`` `x ``", codeSpan("`x"))
	assert.Equal(t, "abc…", shorten("abcdef", 3))
	assert.Equal(t, "é", cutString("éé", 3))
}

var fenceLine = regexp.MustCompile("^(`{3,})(.*)$")

// assertWellFormed checks that every fence is closed, that every
// <details> is closed outside the fences, and that no table row is cut.
func assertWellFormed(t *testing.T, md string) {
	t.Helper()
	fence, depth := "", 0
	for i, line := range strings.Split(md, "\n") {
		if fence != "" {
			if strings.TrimRight(line, "`") == "" && len(line) >= len(fence) {
				fence = ""
			}
			continue
		}
		if m := fenceLine.FindStringSubmatch(line); m != nil {
			fence = m[1]
			continue
		}
		depth += strings.Count(line, "<details>") - strings.Count(line, "</details>")
		require.GreaterOrEqual(t, depth, 0, "line %d closes a <details> never opened", i)
		if strings.HasPrefix(line, "|") {
			require.True(t, strings.HasSuffix(line, "|"), "line %d: a table row cut: %q", i, line)
		}
	}
	require.Empty(t, fence, "a fence left open")
	require.Zero(t, depth, "a <details> left open")
}
