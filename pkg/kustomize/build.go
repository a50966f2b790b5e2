package kustomize

import (
	"fmt"
	"net/http"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Build builds the kustomization of dir from files (clean relative paths)
// with kustomize's krusty, as `kubectl kustomize dir` does: an in-memory
// file system that holds files and nothing else, the load restrictor
// root-only, plugins disabled, no Helm. It returns the YAML stream
// kustomize writes. Call Check first: Build does not refuse what kustomize
// would fetch (a missing base is cloned with git, a URL is read with
// net/http's default transport), which is why convoy-apiserver calls it in
// a child process without network (DenyNetwork).
func Build(where string, files map[string][]byte, dir string) ([]byte, error) {
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := fs.WriteFile("/"+name, data); err != nil {
			return nil, failure.New(ReasonKustomizeInvalid, err, "%s: file %s", where, name)
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	resources, err := krusty.MakeKustomizer(opts).Run(fs, "/"+dir)
	if err != nil {
		return nil, failure.New(ReasonKustomizeInvalid, err, "%s: kustomize build %s", where, display(dir))
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, failure.New(ReasonKustomizeInvalid, err, "%s: kustomize build %s: writing the objects", where, display(dir))
	}
	return out, nil
}

// DenyNetwork makes net/http's default transport, which kustomize's loader
// uses for a remote file, refuse every request: for a process that builds
// kustomizations and has no business on the network (the render's child).
// It is a backstop: it covers net/http's default transport only; the
// child's kernel filter (pkg/render) refuses every Internet socket. The
// child also runs without PATH, so kustomize finds no git to clone a
// remote base with.
func DenyNetwork() {
	http.DefaultTransport = deniedTransport{}
}

type deniedTransport struct{}

func (deniedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("%s %s: the render process has no network", req.Method, req.URL.Redacted())
}
