// Package helmrepo reads a Helm repository's index.yaml: it parses the
// entries it keeps (version, URLs, digest), sorts each chart's versions
// once, and picks a version as Helm does (an exact version, else the
// highest that meets a semver constraint). Its refusals are an *Error of a
// Kind, for the caller to classify (pkg/source maps each to a reason).
package helmrepo

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
)

// Kind is what an Error is.
type Kind int

const (
	// KindUnsupported: not a Helm repository index.
	KindUnsupported Kind = iota + 1
	// KindNotFound: no such chart, or no version of it that meets the
	// constraint.
	KindNotFound
	// KindTooLarge: more than MaxChartVersions versions of the chart.
	KindTooLarge
	// KindInvalid: the version asked for is neither one of the index nor
	// a constraint.
	KindInvalid
)

// Error is a refusal of an index or of a version asked for.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// MaxChartVersions bounds the versions of one chart in an index: an index
// that lists more of the chart a Release asks for is refused
// (KindTooLarge), never cut, which could pick another version than the
// constraint's.
const MaxChartVersions = 10_000

// Index is what is kept of a Helm repository's index.yaml.
type Index struct {
	// bytes is what the parsed index takes in memory (indexSize), what the
	// cache counts it at.
	bytes   int
	entries map[string][]Entry
}

// Size is what the parsed index takes in memory: what a cache counts it
// at.
func (i *Index) Size() int { return i.bytes }

// Versions are the entries of chart, highest version first.
func (i *Index) Versions(chart string) []Entry { return i.entries[chart] }

// indexSize estimates the memory the entries take: their strings and the
// headers of the strings, slices and map buckets that hold them. A short
// entry takes more parsed than in YAML, so the raw size would undercount it.
func indexSize(entries map[string][]Entry) int {
	const (
		stringHeader = int(unsafe.Sizeof(""))
		mapEntry     = 64 // a key, a slice header and the bucket's share
	)
	n := 0
	for chart, versions := range entries {
		n += mapEntry + len(chart) + cap(versions)*int(unsafe.Sizeof(Entry{}))
		for _, e := range versions {
			n += len(e.Version) + len(e.Digest) + cap(e.URLs)*stringHeader
			if e.semver != nil {
				n += int(unsafe.Sizeof(semver.Version{})) + len(e.semver.Original())
			}
			for _, u := range e.URLs {
				n += len(u)
			}
		}
	}
	return n
}

// Entry is one version of a chart in an index.
type Entry struct {
	Version string   `yaml:"version"`
	URLs    []string `yaml:"urls"`
	Digest  string   `yaml:"digest"`
	// semver is Version parsed, nil when it is not a semantic version:
	// parsed once with the index, not at every pick.
	semver *semver.Version `yaml:"-"`
}

// Parse parses index.yaml (YAML or JSON).
func Parse(repo string, data []byte) (*Index, error) {
	// Decoded straight into the fields it keeps (yaml.v3, which reads JSON
	// too), not through JSON as sigs.k8s.io/yaml does: BenchmarkIndex.
	var file struct {
		APIVersion string             `yaml:"apiVersion"`
		Entries    map[string][]Entry `yaml:"entries"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, errorf(KindUnsupported, err, "%s: index.yaml is not a Helm repository index: %v", repo, err)
	}
	if file.APIVersion == "" && file.Entries == nil {
		return nil, errorf(KindUnsupported, nil, "%s: index.yaml has neither apiVersion nor entries: not a Helm repository index", repo)
	}
	for _, versions := range file.Entries {
		sortVersions(versions)
	}
	return &Index{bytes: indexSize(file.Entries), entries: file.Entries}, nil
}

// Pick chooses the entry of version among entries (Index.Versions of the
// chart of repo): the entry of that exact version, else the highest
// version that meets it as a semver constraint (empty: the highest that is
// not a prerelease).
func Pick(repo, chart, version string, entries []Entry) (*Entry, error) {
	if len(entries) == 0 {
		return nil, errorf(KindNotFound, nil, "%s: the index has no chart %s", repo, chart)
	}
	if len(entries) > MaxChartVersions {
		return nil, errorf(KindTooLarge, nil, "%s: the index lists %d versions of chart %s, more than %d: refused, not cut, which could pick another version",
			repo, len(entries), chart, MaxChartVersions)
	}
	for i := range entries {
		if version != "" && entries[i].Version == version {
			return &entries[i], nil
		}
	}
	want := version
	if want == "" {
		want = "*"
	}
	c, err := semver.NewConstraint(want)
	if err != nil {
		return nil, errorf(KindInvalid, err, "%s: version %q of chart %s is neither a version of the index nor a constraint: %v", repo, version, chart, err)
	}
	// The entries are sorted highest first (sortVersions): the first that
	// meets the constraint is the highest that does.
	for i := range entries {
		if v := entries[i].semver; v != nil && c.Check(v) {
			return &entries[i], nil
		}
	}
	return nil, errorf(KindNotFound, nil, "%s: no version of chart %s meets %q", repo, chart, want)
}

// sortVersions parses the versions of a chart's entries and sorts them
// highest first: by semantic version, equal ones by their text (highest
// first), entries that are no semantic version last; equal texts keep the
// order of the index, so the first of them is the one an exact version
// picks.
func sortVersions(entries []Entry) {
	for i := range entries {
		if v, err := semver.NewVersion(entries[i].Version); err == nil {
			entries[i].semver = v
		}
	}
	slices.SortStableFunc(entries, func(a, b Entry) int {
		switch {
		case a.semver == nil && b.semver == nil:
			return 0
		case a.semver == nil:
			return 1
		case b.semver == nil:
			return -1
		case !a.semver.Equal(b.semver):
			return b.semver.Compare(a.semver)
		}
		return strings.Compare(b.Version, a.Version)
	})
}
