package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/ignore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// ReasonPathNotFound is a path that names no directory of the source.
var ReasonPathNotFound = failure.Declare(failure.Reason{
	Name: "PathNotFound", Class: failure.ClassNotFound, Shows: failure.InSyncAndResponse,
	Means:  "spec.source's path names no directory of the source's files",
	Action: "correct the path, or publish a bundle that holds it",
})

// chartFile is the file that makes a directory a chart.
const chartFile = "Chart.yaml"

// renderDirectory renders the directory src.Path of src.Files, the same for
// every source of files: a kustomization there (pkg/kustomize's Check, then
// the Engine's Runner builds it), else a chart's directory (a Chart.yaml
// there), else the manifest files under it, in the order of src.Files, as
// docs/users/directories.md says. A kustomization or a chart is built once
// per content of the files it can read (the build cache).
func (r *Renderer) renderDirectory(ctx context.Context, release *convoyv1alpha1.Release, src *source.Source) ([]*unstructured.Unstructured, *failure.Error) {
	dir := src.Path
	files := make(map[string][]byte, len(src.Files))
	for _, f := range src.Files {
		files[f.Name] = f.Data
	}
	index := kustomize.NewFiles(files).Omit(src.Omitted).Links(src.Links)
	if !index.IsDir(dir) {
		return nil, failure.New(ReasonPathNotFound, nil, "%s holds no directory %s", src.Where, dir)
	}
	where := src.Where
	if dir != "" {
		where += " path " + dir
	}
	if index.Kustomization(dir) != "" {
		plan, err := kustomize.Check(where, index, dir, kustomize.Limits{MaxBytes: r.engine.sources.Limits().MaxArtifactBytes})
		if err != nil {
			return nil, asFailure(err)
		}
		req := KustomizeRequest{Where: where, Dir: dir, Files: map[string][]byte{}, MaxObjects: r.engine.limits.MaxObjects}
		for _, name := range plan.Under(index) {
			req.Files[name] = files[name]
		}
		key := buildKey("kustomize", dir, req.Files, req.MaxObjects)
		return r.engine.cachedBuild(key, func() ([]*unstructured.Unstructured, *failure.Error) {
			return r.engine.runner.Build(ctx, req)
		})
	}
	under := func(name string) (string, bool) {
		if dir == "" {
			return name, true
		}
		rest, ok := strings.CutPrefix(name, dir+"/")
		return rest, ok
	}
	if _, ok := files[path.Join(dir, chartFile)]; ok {
		vals, verr := r.values(ctx, release, where, directoryFiles(files, dir))
		if verr != nil {
			return nil, verr
		}
		req := ChartRequest{Where: where, Files: map[string][]byte{}, Values: vals, Name: release.Name, Namespace: targetNamespace(release), MaxObjects: r.engine.limits.MaxObjects}
		for name, data := range files {
			if rel, ok := under(name); ok {
				req.Files[rel] = data
			}
		}
		if err := helmIgnore(where, req.Files); err != nil {
			return nil, err
		}
		key, err := chartBuildKey(req)
		if err != nil {
			return nil, failure.New(ReasonValuesInvalid, err, "%s: encoding the values", where)
		}
		return r.engine.cachedBuild(key, func() ([]*unstructured.Unstructured, *failure.Error) {
			return r.engine.runner.Template(ctx, req)
		})
	}
	var manifests []source.File
	for _, f := range src.Files {
		if _, ok := under(f.Name); ok && manifest.IsFile(f.Name) {
			manifests = append(manifests, f)
		}
	}
	if len(manifests) == 0 {
		return nil, failure.New(sourcefailure.ReasonArtifactUnsupported, nil, "%s holds no kustomization, no %s and no file ending .yaml, .yml or .json", where, chartFile)
	}
	return renderManifests(manifests)
}

// asFailure is err as a *failure.Error (Check returns no other).
func asFailure(err error) *failure.Error {
	if f, ok := failure.As(err); ok {
		return f
	}
	return failure.New(kustomize.ReasonKustomizeInvalid, err, "%s", err.Error())
}

// helmIgnore removes from a chart's files what its .helmignore and Helm's
// defaults leave out, as helm template DIR does.
func helmIgnore(where string, files map[string][]byte) *failure.Error {
	rules := ignore.Empty()
	if data, ok := files[ignore.HelmIgnore]; ok {
		parsed, err := ignore.Parse(bytes.NewReader(data))
		if err != nil {
			return failure.New(ReasonChartInvalid, err, "%s: %s", where, ignore.HelmIgnore)
		}
		rules = parsed
	}
	rules.AddDefaults()
	for name := range files {
		ignored := rules.Ignore(name, fileInfo{name: path.Base(name)})
		for d := path.Dir(name); !ignored && d != "."; d = path.Dir(d) {
			ignored = rules.Ignore(d, fileInfo{name: path.Base(d), dir: true})
		}
		if ignored {
			delete(files, name)
		}
	}
	return nil
}

// fileInfo is the os.FileInfo of a source's file or directory, for
// .helmignore's rules, which read only the name and whether it is a
// directory.
type fileInfo struct {
	name string
	dir  bool
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return 0 }
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }
func (f fileInfo) Mode() os.FileMode {
	if f.dir {
		return fs.ModeDir
	}
	return 0
}

// buildKey is the key of a build in the build cache: what is built, and
// the content of every file it can read, by name.
func buildKey(kind, dir string, files map[string][]byte, maxObjects int) string {
	h := sha256.New()
	field := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	field([]byte(kind))
	field([]byte(dir))
	_ = binary.Write(h, binary.BigEndian, uint64(maxObjects))
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		field([]byte(n))
		sum := sha256.Sum256(files[n])
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// chartBuildKey is the build key of a chart directory: its files, and what it
// is templated with.
func chartBuildKey(req ChartRequest) (string, error) {
	with, err := json.Marshal(struct {
		Values    map[string]any `json:"values"`
		Name      string         `json:"name"`
		Namespace string         `json:"namespace"`
	}{req.Values, req.Name, req.Namespace})
	if err != nil {
		return "", err
	}
	files := make(map[string][]byte, len(req.Files)+1)
	for n, d := range req.Files {
		files["files/"+n] = d
	}
	files["with"] = with
	return buildKey("chart", "", files, req.MaxObjects), nil
}
