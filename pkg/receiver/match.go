package receiver

import (
	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// followed is a source a Release follows: its repository's URL and the
// ref a delivery must name for it to concern the source, empty for any
// change of the repository.
type followed struct {
	url, ref string
}

// concerns tells whether the delivery d names a source of rel, spec.source
// or spec.valuesSource (webhook.Matches).
func concerns(d webhook.Delivery, rel *convoyv1alpha1.Release) bool {
	for _, f := range sourcesOf(rel) {
		if webhook.Matches(d, f.url, f.ref) {
			return true
		}
	}
	return false
}

// sourcesOf returns the sources of rel a delivery can concern:
//
//   - git: its URL with ref.branch B as refs/heads/B, ref.tag T as
//     refs/tags/T, ref.semver as any ref (a new tag may meet the range);
//     ref.commit never (it is pinned, even when it names a branch);
//   - ociRepository: its URL with its tag (an OCI source has no semver
//     range); a digest never (pinned);
//   - configMap and helmRepository never: a ConfigMap is no repository,
//     and no sender of the Receivers' types sends deliveries of an HTTP
//     chart repository.
func sourcesOf(rel *convoyv1alpha1.Release) []followed {
	var out []followed
	add := func(git *convoyv1alpha1.GitRepositorySource, oci *convoyv1alpha1.OCIRepositorySource) {
		if git != nil {
			if ref, ok := gitRef(git.Ref); ok {
				out = append(out, followed{url: git.URL, ref: ref})
			}
		}
		if oci != nil && oci.Digest == "" && oci.Tag != "" {
			out = append(out, followed{url: oci.URL, ref: oci.Tag})
		}
	}
	add(rel.Spec.Source.Git, rel.Spec.Source.OCIRepository)
	if v := rel.Spec.ValuesSource; v != nil {
		add(v.Git, v.OCIRepository)
	}
	return out
}

// gitRef is the full name of the ref a delivery must name for r, empty
// for any; false when no delivery concerns r (a commit, or no ref).
func gitRef(r convoyv1alpha1.GitReference) (string, bool) {
	switch {
	case r.Commit != "":
		return "", false
	case r.Branch != "":
		return "refs/heads/" + r.Branch, true
	case r.Tag != "":
		return "refs/tags/" + r.Tag, true
	case r.SemVer != "":
		return "", true
	}
	return "", false
}
