package kustomize

import (
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// requests counts what reached net/http's default transport in this test
// process; gitCalls is the file a stand-in git writes when it is run.
var (
	requests atomic.Int32
	gitCalls string
)

type countingTransport struct{}

func (countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	requests.Add(1)
	return deniedTransport{}.RoundTrip(req)
}

// TestMain takes the network from this package's tests, and puts a git on
// PATH that only records that it ran: a kustomization that Check passes
// but that makes kustomize reach out fails FuzzCheck without a packet
// sent or a repository cloned.
func TestMain(m *testing.M) {
	http.DefaultTransport = countingTransport{}
	dir, err := os.MkdirTemp("", "kustomize-fuzz-")
	if err != nil {
		panic(err)
	}
	gitCalls = filepath.Join(dir, "git-called")
	script := "#!/bin/sh\necho \"$@\" >> " + gitCalls + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		panic(err)
	}
	os.Setenv("PATH", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// FuzzCheck: any kustomization, with a base and a plugin file beside it,
// is passed or refused with a declared reason, never a panic; and one that
// Check passes builds (or fails to) without a request or a run of git.
func FuzzCheck(f *testing.F) {
	f.Add("resources:\n- ../base\n- x.yaml\n", "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {a: b}\nfieldSpecs: [{path: metadata/labels, create: true}]\n")
	f.Add("resources:\n- https://example.com/x.yaml\n", "")
	f.Add("resources:\n- github.com/example/app//base?ref=v1\n", "")
	f.Add("components:\n- ../base\ntransformers:\n- plugin.yaml\n", "apiVersion: example.com/v1\nkind: Exec\nmetadata: {name: e}\n")
	f.Add("configMapGenerator:\n- name: c\n  files: [k=x.yaml]\n  envs: [x.yaml]\n", "")
	f.Add("patches:\n- path: x.yaml\n- patch: '[{\"op\": \"add\", \"path\": \"/a\", \"value\": 1}]'\n  target: {kind: ConfigMap}\n", "")
	f.Add("helmCharts:\n- name: c\n", "")
	f.Add("resources: [../app]\n", "")
	f.Fuzz(func(t *testing.T, kustomization, plugin string) {
		files := map[string][]byte{
			"app/kustomization.yaml":  []byte(kustomization),
			"app/x.yaml":              []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
			"app/plugin.yaml":         []byte(plugin),
			"base/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
			"base/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n"),
		}
		_, err := Check(where, NewFiles(files), "app", Limits{})
		if err != nil {
			f, ok := failure.As(err)
			require.True(t, ok, "not a failure.Error: %v", err)
			require.Contains(t, []string{ReasonKustomizeRemoteRefused, ReasonKustomizePluginRefused, ReasonKustomizeInvalid, ReasonKustomizeTooLarge}, f.Reason)
			return
		}
		_, _ = Build(where, files, "app")
		require.Zero(t, requests.Load(), "kustomize made a request for a kustomization Check passed:\n%s", kustomization)
		_, statErr := os.Stat(gitCalls)
		require.True(t, os.IsNotExist(statErr), "kustomize ran git for a kustomization Check passed:\n%s", kustomization)
	})
}

// The harness of FuzzCheck sees what kustomize reaches for: unchecked, a
// URL makes a request and a remote base runs git (the stand-in, which
// fails). It then forgets them for the fuzz target.
func TestHarnessSeesWhatKustomizeFetches(t *testing.T) {
	t.Cleanup(func() {
		requests.Store(0)
		_ = os.Remove(gitCalls)
	})
	_, err := Build(where, map[string][]byte{"app/kustomization.yaml": []byte("resources:\n- https://example.com/x.yaml\n")}, "app")
	require.Error(t, err)
	require.EqualValues(t, 1, requests.Load())
	_, err = Build(where, map[string][]byte{"app/kustomization.yaml": []byte("resources:\n- https://github.com/example/app//base?ref=v1\n")}, "app")
	require.Error(t, err)
	_, err = os.Stat(gitCalls)
	require.NoError(t, err, "git was run for a remote base")
}
