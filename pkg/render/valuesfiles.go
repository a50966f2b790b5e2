package render

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// DefaultMaxValuesFileBytes bounds one file of spec.content.valuesFiles
// (Limits.MaxValuesFileBytes): 1 MiB, what a ConfigMap of valuesFrom can
// hold at most.
const DefaultMaxValuesFileBytes = 1 << 20

// ReasonValuesFileTooLarge is a values file of the source past
// --max-values-file-bytes.
var ReasonValuesFileTooLarge = failure.Declare(failure.Reason{
	Name: "ValuesFileTooLarge", Class: failure.ClassOverLimit, Shows: failure.InSyncAndResponse, Refusal: true,
	Means:  "a file of spec.content.valuesFiles is larger than --max-values-file-bytes; it was not parsed",
	Action: "make the values file smaller (or split it into several), or raise --max-values-file-bytes",
})

// chartFiles reads a file of a chart's directory by its path relative to
// that directory (clean, with /); ok is false when there is none.
type chartFiles func(name string) (data []byte, ok bool, err *failure.Error)

// directoryFiles reads the files of a source's directory dir ("" for its
// root) before .helmignore: helm template DIR -f FILE reads FILE from the
// disk whatever .helmignore says.
func directoryFiles(files map[string][]byte, dir string) chartFiles {
	return func(name string) ([]byte, bool, *failure.Error) {
		data, ok := files[path.Join(dir, name)]
		return data, ok, nil
	}
}

// packagedFiles reads the files of a packaged chart, by path relative to
// its directory, with Helm's own loader (archive.LoadArchiveFiles: the
// first element of each path is the chart's directory). The archive is
// read at the first call only: a Release without valuesFiles never reads
// it here. Every chart went through archive.CheckChart (pkg/archive) when
// it was fetched, so its entries are already bounded.
func packagedFiles(where string, tgz []byte) chartFiles {
	var (
		files   map[string][]byte
		loadErr *failure.Error
	)
	return func(name string) ([]byte, bool, *failure.Error) {
		if files == nil && loadErr == nil {
			loaded, err := archive.LoadArchiveFiles(bytes.NewReader(tgz))
			if err != nil {
				loadErr = failure.New(ReasonChartInvalid, err, "%s is not a Helm chart", where)
			} else {
				files = make(map[string][]byte, len(loaded))
				for _, f := range loaded {
					files[f.Name] = f.Data
				}
			}
		}
		if loadErr != nil {
			return nil, false, loadErr
		}
		data, ok := files[name]
		return data, ok, nil
	}
}

// ValuesFilePath checks the path of a values file as the CRD's rule does
// (relative, no .. element: the file is in the chart's directory) and
// returns it clean. The render checks it again: a Release written before
// the rule, or by a client that bypasses it, is refused here too.
func ValuesFilePath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("an empty path")
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("path %q is absolute: it must be relative to the chart's directory", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return "", fmt.Errorf("path %q has a .. element: it must be within the chart's directory", p)
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", fmt.Errorf("path %q names the chart's directory, not a file", p)
	}
	return clean, nil
}

// valuesFile reads the values of spec.content.valuesFiles[i] from files
// (where names the chart in messages); nil values and no error for an
// optional file that is missing.
func (r *Renderer) valuesFile(where string, i int, f convoyv1alpha1.ValuesFile, files chartFiles) (map[string]any, *failure.Error) {
	name, err := ValuesFilePath(f.Path)
	if err != nil {
		return nil, failure.New(ReasonValuesInvalid, err, "valuesFiles %d: %s", i, err.Error())
	}
	data, ok, ferr := files(name)
	switch {
	case ferr != nil:
		return nil, ferr
	case !ok && f.Optional:
		return nil, nil
	case !ok:
		return nil, failure.New(ReasonValuesNotFound, nil, "valuesFiles %d: %s holds no file %s", i, where, name)
	}
	if limit := r.engine.limits.MaxValuesFileBytes; len(data) > limit {
		return nil, failure.New(ReasonValuesFileTooLarge, nil, "valuesFiles %d: %s of %s is %d bytes, more than the limit of %d (--max-values-file-bytes)", i, name, where, len(data), limit)
	}
	vals, perr := loader.LoadValues(bytes.NewReader(data))
	if perr != nil {
		return nil, failure.New(ReasonValuesInvalid, perr, "valuesFiles %d: %s of %s is not a YAML map of values", i, name, where)
	}
	return vals, nil
}
