package render

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// renderManifests parses files of plain manifests, in order. Values are
// not read for plain manifests: they are not templates.
func renderManifests(files []source.File) ([]*unstructured.Unstructured, *failure.Error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		got, err := parseFile(f.Where, f.Data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// parseFile parses one file of manifests (manifest.ParseFile); a file that
// is not text, or a document that does not parse, is ManifestInvalid.
func parseFile(where string, content []byte) ([]*unstructured.Unstructured, *failure.Error) {
	objs, err := manifest.ParseFile(where, content)
	if perr, ok := errors.AsType[*manifest.Error](err); ok && perr.Doc == 0 {
		return nil, failure.New(ReasonManifestInvalid, perr.Err, "%s", perr.Where)
	} else if ok {
		return nil, failure.New(ReasonManifestInvalid, perr.Err, "%s document %d", perr.Where, perr.Doc)
	} else if err != nil {
		return nil, failure.New(ReasonManifestInvalid, err, "%s", where)
	}
	return objs, nil
}
