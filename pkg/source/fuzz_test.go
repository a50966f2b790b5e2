package source

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/require"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// requireReasoned fails unless err is a *failure.Error with a reason and a
// message.
func requireReasoned(t *testing.T, err error) {
	t.Helper()
	f, ok := failure.As(err)
	require.True(t, ok, "not a failure.Error: %v", err)
	require.NotEmpty(t, f.Reason)
	require.NotEmpty(t, f.Message)
}

// FuzzIndex: any index.yaml of a Helm repository and any version
// constraint give an entry of that chart, or a reasoned error; never a
// panic. An entry picked has the version asked, or one that meets it.
func FuzzIndex(f *testing.F) {
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0, urls: [web-1.2.0.tgz], digest: abc}\n  - {version: 2.0.0-rc.1, urls: [a]}\n", "")
	f.Add("apiVersion: v1\nentries:\n  web:\n  - {version: 1.2.0}\n  - {version: 1.3.0}\n", ">=1.2.0 <2.0.0")
	f.Add("{\"apiVersion\": \"v1\", \"entries\": {\"web\": [{\"version\": \"v1\"}]}}", "v1")
	f.Add("a: &a [*a, *a]\nb: &b [*a, *a]\n", "~1")
	f.Add("entries: {web: 3}", "||")
	f.Fuzz(func(t *testing.T, text, version string) {
		idx, err := parseIndex("https://charts.example", []byte(text))
		if err != nil {
			requireReasoned(t, err)
			return
		}
		src := &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: version}
		entry, err := pickVersion(src, idx.entries["web"])
		if err != nil {
			requireReasoned(t, err)
			return
		}
		require.NotNil(t, entry)
		require.Contains(t, idx.entries["web"], *entry)
	})
}

// FuzzUnbundle: any bytes as a bundle of manifests give sorted manifest
// files within the limit, or a reasoned error; never a panic. The chart's
// check of an archive (checkChart) takes the same bytes.
func FuzzUnbundle(f *testing.F) {
	for _, files := range []map[string]string{
		{"a.yaml": "kind: ConfigMap", "b/c.json": "{}", "README.md": "x"},
		{"x.txt": "no manifest"},
	} {
		data, err := ociregistry.TarGz(files)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("not gzip"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	// Sparse files: archive/tar would give their holes as NUL bytes it
	// never reads, a terabyte of them from a few hundred bytes.
	for _, format := range ociregistry.SparseFormats {
		for _, size := range []int64{512, 1 << 40} {
			data, err := ociregistry.SparseTarGz(format, "a.yaml", size)
			require.NoError(f, err)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		files, err := unbundle("OCI example/bundle:1", data, limit)
		if cerr := checkChart("OCI example/chart:1", data, limit); cerr != nil {
			requireReasoned(t, cerr)
		}
		if err != nil {
			requireReasoned(t, err)
			return
		}
		total := 0
		for i, file := range files {
			require.True(t, IsManifestFile(file.Name), file.Name)
			if i > 0 {
				require.LessOrEqual(t, files[i-1].Name, file.Name)
			}
			total += len(file.Data)
		}
		require.LessOrEqual(t, total, limit)
	})
}

// FuzzDockerConfig: any .dockerconfigjson gives the entry of the registry or
// none, or an error; never a panic.
func FuzzDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example":{"auth":"YTpi"}}}`))
	f.Add([]byte(`{"auths":{"https://registry.example/v2/":{"username":"a"},"registry.example/team":{}}}`))
	f.Add([]byte(`{"auths":{"%zz":{}}}`))
	f.Add([]byte(`[]`))
	repo, err := name.NewRepository("registry.example/team/web")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = dockerConfigEntry(data, repo)
	})
}
