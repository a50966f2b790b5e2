// Package sourcefailure declares the reasons of a source, or of another
// input of the render, that could not be read or fetched (pkg/failure),
// apart from the fetchers so that the render, the HTTP client of the
// sources and the tests name them without importing pkg/source.
package sourcefailure

import (
	"context"
	"errors"
	"fmt"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Reasons of a source or an input of the render that could not be read (a
// *failure.Error); the render's own reasons are in pkg/render. Each is
// declared with its class (pkg/failure): the InSync condition, /diff and
// /preview carry it without naming it.
var (
	ReasonSourceNotFound = failure.Declare(failure.Reason{
		Name: "SourceNotFound", Class: failure.ClassNotFound, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "the source ConfigMap does not exist",
		Action: "create the ConfigMap spec.source.configMap names in the Release's namespace, or correct the name",
	})
	ReasonSourceInvalid = failure.Declare(failure.Reason{
		Name: "SourceInvalid", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "no source, more than one source kind, a source ConfigMap that holds neither a chart nor a manifest key, or a URL that cannot be used (credentials in it, plain http)",
		Action: "correct spec.source as the message says",
	})
	ReasonInputForbidden = failure.Declare(failure.Reason{
		Name: "InputForbidden", Class: failure.ClassForbidden, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "the identity the Release acts as may not read an input (the source ConfigMap, a valuesFrom ConfigMap or Secret, the Secret of secretRef or certSecretRef, the render store); the message is the API server's, which names the user, the verb and the object",
		Action: "grant the Release's ServiceAccount get on that object, or stop naming it",
	})
	ReasonInputUnavailable = failure.Declare(failure.Reason{
		Name: "InputUnavailable", Class: failure.ClassUnavailable, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "an input could not be read for a reason other than NotFound or Forbidden (a timeout, a server error); it says nothing about the Release itself",
		Action: "nothing if it passes at the next pass; otherwise check the API server",
	})
)

// Reasons of a source that could not be fetched (a *failure.Error). Each
// tells its cause apart; the InSync condition and /diff carry it as the
// reason of an Undetermined result, /preview as the reason of its status.
var (
	ReasonSourceUnreachable = failure.Declare(failure.Reason{
		Name: "SourceUnreachable", Class: failure.ClassUnavailable, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "the registry or repository did not answer (network failure, 5xx, 429)",
		Action: "check the registry's or repository's server and the network; the next pass tries again",
	})
	ReasonSourceUnauthorized = failure.Declare(failure.Reason{
		Name: "SourceUnauthorized", Class: failure.ClassForbidden, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "the registry or repository answered 401 or 403: the credentials of secretRef are missing, wrong, or not allowed",
		Action: "correct the Secret spec.source's secretRef names, or grant those credentials access",
	})
	ReasonArtifactNotFound = failure.Declare(failure.Reason{
		Name: "ArtifactNotFound", Class: failure.ClassNotFound, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "no such repository, tag, digest, chart or chart version (404, or nothing in the index matches)",
		Action: "publish the artifact, or correct the reference or version range of spec.source",
	})
	ReasonDigestMismatch = failure.Declare(failure.Reason{
		Name: "DigestMismatch", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "bytes that do not hash to the digest they were asked for by (a manifest, a blob, a chart against its index entry)",
		Action: "the registry or repository serves corrupt or substituted content: investigate it before trusting it",
	})
	ReasonArtifactTooLarge = failure.Declare(failure.Reason{
		Name: "ArtifactTooLarge", Class: failure.ClassOverLimit, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "an artifact, a manifest, what an archive inflates to, or what a file of it claims passes --max-artifact-bytes",
		Action: "make the artifact smaller, or raise --max-artifact-bytes",
	})
	ReasonIndexTooLarge = failure.Declare(failure.Reason{
		Name: "IndexTooLarge", Class: failure.ClassOverLimit, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "a Helm repository's index passes --max-index-bytes or holds too many versions",
		Action: "prune the repository's index, or raise --max-index-bytes",
	})
	ReasonArtifactUnsupported = failure.Declare(failure.Reason{
		Name: "ArtifactUnsupported", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "an OCI artifact that is neither a Helm chart nor a bundle of manifests, an index that is not one, or a chart or a bundle that holds a sparse file",
		Action: "publish the artifact as a Helm chart or a bundle of manifests (see the sources docs)",
	})
	ReasonFetchTimeout = failure.Declare(failure.Reason{
		Name: "FetchTimeout", Class: failure.ClassUnavailable, Shows: []failure.Where{failure.InSync, failure.Response},
		Means:  "fetching the source took longer than --fetch-timeout and was stopped",
		Action: "check the registry's speed; raise --fetch-timeout if large artifacts are expected",
	})
)

// Reasons of Git sources beside those of every source.
var (
	ReasonGitHostKeyRefused = failure.Declare(failure.Reason{
		Name: "GitHostKeyRefused", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "the SSH server presented a host key that the known_hosts of the Release's secretRef does not list for its host (or revokes): the server may be impersonated",
		Action: "check the server's host key out of band, then correct known_hosts in the Secret",
	})
	ReasonGitRefsTooMany = failure.Declare(failure.Reason{
		Name: "GitRefsTooMany", Class: failure.ClassOverLimit, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
		Means:  "the repository advertises more refs than --max-git-refs",
		Action: "raise --max-git-refs, or serve the manifests from a repository with fewer refs",
	})
)

// Unavailable is the failure of an input that could not be read for a
// reason other than NotFound or Forbidden: ClusterUnreachable when the
// network failed (the cause is the cluster, not the input),
// InputUnavailable otherwise (a server error, the end of the caller's
// context). The message is the formatted text, then
// err's.
func Unavailable(err error, format string, args ...any) *failure.Error {
	ended := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if what := egress.NetworkFailure(err); what != "" && !ended {
		return failure.New(failure.ReasonClusterUnreachable, err, "the cluster is unreachable (%s): %s", what, fmt.Sprintf(format, args...))
	}
	return failure.New(ReasonInputUnavailable, err, format, args...)
}
