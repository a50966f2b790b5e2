package helmrepo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/Masterminds/semver/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

// requireKind fails unless err is an *Error with a Kind and a message.
func requireKind(t *testing.T, err error) {
	t.Helper()
	e, ok := errors.AsType[*Error](err)
	require.True(t, ok, "not an *Error: %v", err)
	require.NotZero(t, e.Kind)
	require.NotEmpty(t, e.Message)
}

// generatedIndex is an index.yaml of one chart in n versions, as helm repo
// index writes its entries (name, version, appVersion, created, digest,
// urls, description).
func generatedIndex(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := range n {
		v := fmt.Sprintf("%d.%d.%d", i/1000, i/10%100, i%10)
		fmt.Fprintf(&b, "  - name: web\n    version: %s\n    appVersion: %s\n    created: \"2026-12-01T00:00:00Z\"\n"+
			"    description: A chart of the benchmark, one of many versions.\n    digest: %064x\n    urls:\n    - https://charts.example/web-%s.tgz\n", v, v, i, v)
	}
	return []byte(b.String())
}

// An index that lists more versions of the chart asked for than
// MaxChartVersions is refused, not cut; the cache counts an index at what
// its parsed entries take.
func TestIndexLimits(t *testing.T) {
	src := &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: "0.0.1"}
	atCap, err := Parse(src.URL, generatedIndex(MaxChartVersions))
	require.NoError(t, err)
	_, err = Pick(src.URL, src.Chart, src.Version, atCap.Versions("web"))
	require.NoError(t, err)

	over, err := Parse(src.URL, generatedIndex(MaxChartVersions+1))
	require.NoError(t, err)
	_, err = Pick(src.URL, src.Chart, src.Version, over.Versions("web"))
	ferr, ok := errors.AsType[*Error](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, KindTooLarge, ferr.Kind)
	assert.Contains(t, ferr.Message, "lists 10001 versions of chart web, more than 10000")

	// Short entries take more parsed than their YAML: the size counts the
	// strings and the headers that hold them.
	short, err := Parse(src.URL, []byte("entries:\n  a:\n  - {version: '1', urls: [u], digest: d}\n"))
	require.NoError(t, err)
	assert.Greater(t, short.Size(), len("a")+len("1")+len("u")+len("d")+int(unsafe.Sizeof(Entry{})))
}

// BenchmarkIndex: one op parses an index of 10,000 versions of one chart (the
// most MaxChartVersions allows; what a Fetcher does once per URL and
// credentials per --source-resolve-max-age), or picks a version of it with
// a constraint (what every Resolve of a Helm source does with the cached
// index). It reports the index's bytes and what the cache counts it at.
func BenchmarkIndex(b *testing.B) {
	data := generatedIndex(MaxChartVersions)
	idx, err := Parse("https://charts.example", data)
	require.NoError(b, err)
	require.Len(b, idx.Versions("web"), MaxChartVersions)
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse("https://charts.example", data); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "index-bytes")
		b.ReportMetric(float64(idx.Size()), "cached-bytes")
	})
	b.Run("pick", func(b *testing.B) {
		src := &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: ">=5.0.0 <6.0.0"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Pick(src.URL, src.Chart, src.Version, idx.Versions("web")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzIndex: any index.yaml of a Helm repository and any version
// constraint give an entry of that chart, or a reasoned error; never a
// panic. An entry picked has the version asked, or else the highest version
// of the chart that meets the constraint ("*" when none is asked); no entry
// is picked only when none meets it.
func FuzzIndex(f *testing.F) {
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0, urls: [web-1.2.0.tgz], digest: abc}\n  - {version: 2.0.0-rc.1, urls: [a]}\n", "")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0}\n  - {version: 1.3.0}\n", ">=1.2.0 <2.0.0")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.3.0}\n  - {version: 1.10.0}\n  - {version: v1.9.0}\n  - {version: 2.0.0}\n", "^1.2")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0}\n  - {version: v1.0.0}\n  - {version: 1.0.0+b}\n", "~1")
	f.Add("{\"apiVersion\": \"v1\", \"entries\": {\"web\": [{\"version\": \"v1\"}]}}", "v1")
	f.Add("a: &a [*a, *a]\nb: &b [*a, *a]\n", "~1")
	f.Add("entries: {web: 3}", "||")
	f.Fuzz(func(t *testing.T, text, version string) {
		idx, err := Parse("https://charts.example", []byte(text))
		if err != nil {
			requireKind(t, err)
			return
		}
		entries := idx.Versions("web")
		src := &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: version}
		entry, err := Pick(src.URL, src.Chart, src.Version, entries)
		exact := version != "" && slices.ContainsFunc(entries, func(e Entry) bool { return e.Version == version })
		want := version
		if want == "" {
			want = "*"
		}
		constraint, cerr := semver.NewConstraint(want)
		// meeting lists the versions of the entries that meet the constraint.
		var meeting []*semver.Version
		if cerr == nil {
			for _, e := range entries {
				if v, err := semver.NewVersion(e.Version); err == nil && constraint.Check(v) {
					meeting = append(meeting, v)
				}
			}
		}
		if err != nil {
			requireKind(t, err)
			if e, _ := errors.AsType[*Error](err); e.Kind != KindTooLarge {
				require.False(t, exact, "version %q is in the index", version)
				require.Empty(t, meeting, "versions meet %q", want)
			}
			return
		}
		require.NotNil(t, entry)
		require.Contains(t, entries, *entry)
		if exact {
			require.Equal(t, version, entry.Version)
			return
		}
		require.NoError(t, cerr, "an entry for %q, neither a version of the index nor a constraint", version)
		picked, err := semver.NewVersion(entry.Version)
		require.NoError(t, err, "picked %q, not a version", entry.Version)
		require.True(t, constraint.Check(picked), "picked %s, which does not meet %q", entry.Version, want)
		for _, v := range meeting {
			require.False(t, v.GreaterThan(picked), "picked %s, but %s meets %q too", entry.Version, v.Original(), want)
		}
	})
}
