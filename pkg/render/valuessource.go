package render

import (
	"context"
	"path"
	"slices"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// ReadsValuesSource tells whether an entry of release's valuesFiles reads
// the values source (source values): only then is spec.valuesSource
// fetched, resolved, and a part of the render's key.
func ReadsValuesSource(release *convoyv1alpha1.Release) bool {
	if release == nil || release.Spec.Content == nil {
		return false
	}
	return slices.ContainsFunc(release.Spec.Content.ValuesFiles, func(f convoyv1alpha1.ValuesFile) bool {
		return f.Source == convoyv1alpha1.ValuesFileSourceValues
	})
}

// fetchValuesSource fetches the values source of release when an entry of
// its valuesFiles reads it (nil, nil otherwise: a Release that reads none
// costs no request). An entry that reads it without spec.valuesSource is
// SourceInvalid. Its errors are source.Fetcher.FetchValues's: they name
// spec.valuesSource.
func (r *Renderer) fetchValuesSource(ctx context.Context, release *convoyv1alpha1.Release) (*source.Source, error) {
	if !ReadsValuesSource(release) {
		return nil, nil
	}
	if release.Spec.ValuesSource == nil {
		i := slices.IndexFunc(release.Spec.Content.ValuesFiles, func(f convoyv1alpha1.ValuesFile) bool {
			return f.Source == convoyv1alpha1.ValuesFileSourceValues
		})
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "valuesFiles %d reads source values, but spec.valuesSource is not set", i)
	}
	return r.engine.sources.FetchValues(ctx, release, r.inputs)
}

// valuesSourceKey is the context key of the values source of a render
// (withValuesSource).
type valuesSourceKey struct{}

// withValuesSource is ctx carrying src, the values source fetched for this
// render, to values.
func withValuesSource(ctx context.Context, src *source.Source) context.Context {
	if src == nil {
		return ctx
	}
	return context.WithValue(ctx, valuesSourceKey{}, src)
}

// valuesSourceOf is the values source of withValuesSource, or nil.
func valuesSourceOf(ctx context.Context) *source.Source {
	src, _ := ctx.Value(valuesSourceKey{}).(*source.Source)
	return src
}

// valuesSourceFiles reads the files of the values source src by their path
// relative to its directory (src.Path, "" for its root), which
// ValuesFilePath has already kept within it; where names it in messages.
// A file left out of the fetch for its size, or a link, fails as it would
// in a directory the render reads.
func valuesSourceFiles(src *source.Source) (where string, files chartFiles) {
	where = "spec.valuesSource " + src.Where
	if src.Path != "" {
		where += " path " + src.Path
	}
	byName := make(map[string][]byte, len(src.Files))
	for _, f := range src.Files {
		byName[f.Name] = f.Data
	}
	under := func(name string, list []string) bool {
		return slices.ContainsFunc(list, func(l string) bool { return name == l || strings.HasPrefix(name, l+"/") })
	}
	return where, func(name string) ([]byte, bool, *failure.Error) {
		full := path.Join(src.Path, name)
		if data, ok := byName[full]; ok {
			return data, true, nil
		}
		switch {
		case under(full, src.Omitted):
			return nil, false, failure.New(sourcefailure.ReasonArtifactTooLarge, nil, "%s: %s was left out of the fetch to keep it within --max-artifact-bytes", where, name)
		case under(full, src.Links):
			return nil, false, failure.New(failure.ReasonLinkUnsupported, nil, "%s: %s is a link, which values files may not be", where, name)
		}
		return nil, false, nil
	}
}
