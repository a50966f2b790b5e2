package source

// Reasons of a source or an input of the render that could not be read (a
// *failure.Error); the render's own reasons are in pkg/render.
const (
	// ReasonSourceNotFound: the source ConfigMap does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonSourceInvalid: no source, more than one source kind, a source
	// ConfigMap that holds neither a chart nor a manifest key, or a URL
	// that cannot be used.
	ReasonSourceInvalid = "SourceInvalid"
	// ReasonInputForbidden: the identity the Release acts as may not read
	// an input (the source ConfigMap, a valuesFrom ConfigMap or Secret, the
	// Secret of secretRef or certSecretRef, the render store); the message
	// is the API server's, which names the user, the verb and the object.
	ReasonInputForbidden = "InputForbidden"
	// ReasonInputUnavailable: an input could not be read for a reason other
	// than NotFound or Forbidden (timeout, server error). Unlike the
	// reasons above, it says nothing about the Release itself and may pass
	// on a retry.
	ReasonInputUnavailable = "InputUnavailable"
)

// Reasons of a source that could not be fetched (a *failure.Error). Each
// tells its cause apart; the InSync condition and /diff carry it as the
// reason of an Undetermined result (see IsFetchFailure), /preview as the
// reason of its status.
const (
	// ReasonSourceUnreachable: the registry or repository did not answer
	// (network failure, 5xx, 429), or the address policy refused it.
	ReasonSourceUnreachable = "SourceUnreachable"
	// ReasonSourceUnauthorized: the registry or repository answered 401 or
	// 403: the credentials of secretRef are missing, wrong, or not allowed.
	ReasonSourceUnauthorized = "SourceUnauthorized"
	// ReasonArtifactNotFound: no such repository, tag, digest, chart or
	// chart version (404, or nothing in the index matches).
	ReasonArtifactNotFound = "ArtifactNotFound"
	// ReasonDigestMismatch: bytes that do not hash to the digest they were
	// asked for by (a manifest, a blob, a chart against its index entry).
	ReasonDigestMismatch = "DigestMismatch"
	// ReasonArtifactTooLarge: an artifact, a manifest, what an archive
	// inflates to, or what a file of it claims passes --max-artifact-bytes.
	ReasonArtifactTooLarge = "ArtifactTooLarge"
	// ReasonIndexTooLarge: a Helm repository's index passes
	// --max-index-bytes.
	ReasonIndexTooLarge = "IndexTooLarge"
	// ReasonArtifactUnsupported: an OCI artifact that is neither a Helm
	// chart nor a bundle of manifests, an index that is not one, or a chart
	// or a bundle that holds a sparse file.
	ReasonArtifactUnsupported = "ArtifactUnsupported"
	// ReasonFetchTimeout: fetching the source took longer than
	// --fetch-timeout and was stopped.
	ReasonFetchTimeout = "FetchTimeout"
	// ReasonCredentialsInvalid: the Secret of secretRef or certSecretRef is
	// missing, or not of the expected type or keys.
	ReasonCredentialsInvalid = "CredentialsInvalid"
)

// IsFetchFailure reports whether reason is that of a source that could not
// be fetched from a registry or repository.
func IsFetchFailure(reason string) bool {
	switch reason {
	case ReasonSourceUnreachable, ReasonSourceUnauthorized, ReasonArtifactNotFound, ReasonDigestMismatch,
		ReasonArtifactTooLarge, ReasonIndexTooLarge, ReasonArtifactUnsupported, ReasonFetchTimeout, ReasonCredentialsInvalid:
		return true
	}
	return false
}
