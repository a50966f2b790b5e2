package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
)

// KustomizeRequest is what building a kustomization needs; it reads
// nothing.
type KustomizeRequest struct {
	// Where names the directory in messages: "oci://HOST/PATH@sha256:... path overlays/prod".
	Where string `json:"where"`
	// Files are the files the build may read, by clean relative path: those
	// under the directories of the kustomizations kustomize.Check reached.
	Files map[string][]byte `json:"files"`
	// Dir is the directory of the kustomization ("" for the root).
	Dir string `json:"dir"`
	// MaxObjects is the most objects the build may give.
	MaxObjects int `json:"maxObjects"`
}

// buildKustomization builds req with kustomize and parses its objects, at
// most req.MaxObjects.
func buildKustomization(req KustomizeRequest) ([]*unstructured.Unstructured, *failure.Error) {
	out, err := kustomize.Build(req.Where, req.Files, req.Dir)
	if err != nil {
		return nil, asFailure(err)
	}
	objs, perr := parseFile(req.Where+": kustomize build", out)
	if perr != nil {
		return nil, perr
	}
	if req.MaxObjects > 0 && len(objs) > req.MaxObjects {
		return nil, failure.New(ReasonTooManyObjects, nil, "%s: the kustomization builds %d objects, more than the limit of %d (--max-render-objects)", req.Where, len(objs), req.MaxObjects)
	}
	return objs, nil
}
