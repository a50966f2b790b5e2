package source

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/errtext"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/oci"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcehttp"
)

// artifact is what the content cache keeps of an artifact, by origin and
// digest (contentKey).
type artifact struct {
	chart []byte
	files []File
	// links are the links of a bundle or a Git commit (symbolic and hard
	// links, submodules), which are not read: a render may not read one
	// (checkLinks).
	links []link
	// objects are a Git commit's raw objects, what its signatures are
	// verified on (verifyGit); nil for other sources.
	objects *gitObjects
}

func (a *artifact) size() int {
	n := len(a.chart) + a.objects.size()
	for _, f := range a.files {
		n += len(f.Name) + len(f.Where) + len(f.Data)
	}
	for _, l := range a.links {
		n += len(l.name)
	}
	return n
}

// ociResolution is an OCI source resolved to a digest.
type ociResolution struct {
	repo     name.Repository
	creds    *credentials.Credentials
	puller   *remote.Puller
	resolved *subresourcesv1alpha1.ResolvedSource
	// confirmed says that these credentials resolved the tag (a HEAD of
	// its manifest, theirs, within ResolveMaxAge): the registry lets them
	// read the manifest.
	confirmed bool
}

// resolveOCI resolves a tag to a digest (a HEAD of the manifest, kept for
// ResolveMaxAge per URL, tag and credentials); a digest is its own.
func (f *Fetcher) resolveOCI(ctx context.Context, namespace string, src *convoyv1alpha1.OCIRepositorySource, inputs Inputs) (*ociResolution, error) {
	repo, err := repositoryOf(src.URL, f.opts.Policy.AllowLoopback)
	if err != nil {
		return nil, err
	}
	creds, err := credentials.Registry(ctx, releaseSecrets{inputs: inputs, namespace: namespace}, namespace, src, repo)
	if err != nil {
		return nil, err
	}
	puller, err := f.pullerFor(repo, creds)
	if err != nil {
		return nil, err
	}
	r := &ociResolution{repo: repo, creds: creds, puller: puller,
		resolved: &subresourcesv1alpha1.ResolvedSource{Kind: KindOCIRepository, URL: src.URL, Tag: src.Tag, Digest: src.Digest}}
	if src.Tag == "" {
		return r, nil
	}
	key := "oci\x00" + src.URL + "\x00" + src.Tag + "\x00" + creds.Key
	// A tag resolved with these credentials (they are part of the key)
	// within ResolveMaxAge confirms, as a HEAD would, that they may read
	// its manifest.
	since := f.freshAfter(ctx)
	if d, ok := f.getResolution(key, since); f.countLookup(agecache.CacheResolve, ok) {
		r.resolved.Digest, r.confirmed = d, true
		return r, nil
	}
	where := src.URL + ":" + src.Tag
	v, err := f.shared(ctx, namespace, "resolve\x00"+key+freshFlight(since), func(ctx context.Context) (any, error) {
		if d, ok := f.getResolution(key, since); ok {
			return d, nil
		}
		desc, err := puller.Head(ctx, repo.Tag(src.Tag))
		if err != nil {
			return nil, registryFailure(where+": resolving the tag", err)
		}
		if err := f.checkManifestSize(where, desc); err != nil {
			return nil, err
		}
		f.putResolution(key, desc.Digest.String())
		return desc.Digest.String(), nil
	})
	if err != nil {
		return nil, err
	}
	r.resolved.Digest, r.confirmed = v.(string), true
	return r, nil
}

// oci fetches an artifact of an OCI registry: it resolves it (resolveOCI),
// then reads the manifest by digest (verified by the registry client) and
// the chart or bundle layer by digest (its size checked against the
// manifest before it is downloaded, then its bytes against both). An
// artifact in the content cache is used only once the registry confirmed
// that these credentials may read it.
func (f *Fetcher) oci(ctx context.Context, namespace string, src *convoyv1alpha1.OCIRepositorySource, inputs Inputs) (*Source, error) {
	dir, err := CleanPath(src.Path)
	if err != nil {
		return nil, err
	}
	out, links, err := f.ociArtifact(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	if out.Chart != nil && dir != "" {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s is a Helm chart: path %q is for a bundle of files", out.Where, src.Path)
	}
	if out.Links, err = checkLinks(out.Where, links, dir); err != nil {
		return nil, err
	}
	out.Path = dir
	return out, nil
}

// ociArtifact fetches the artifact of an OCI source (see oci), and
// returns the links of a bundle beside it.
func (f *Fetcher) ociArtifact(ctx context.Context, namespace string, src *convoyv1alpha1.OCIRepositorySource, inputs Inputs) (*Source, []link, error) {
	r, err := f.resolveOCI(ctx, namespace, src, inputs)
	if err != nil {
		return nil, nil, err
	}
	where := src.URL + "@" + r.resolved.Digest
	if src.Tag != "" {
		where = src.URL + ":" + src.Tag + "@" + r.resolved.Digest
	}
	ref := r.repo.Digest(r.resolved.Digest)
	out := &Source{Where: where, Resolved: r.resolved}
	if src.Verify != nil {
		// The digest verified is the one fetched below: no second resolve.
		if out.Resolved.Verified, err = f.verifyOCI(ctx, namespace, src, inputs, r, ref, where); err != nil {
			return nil, nil, err
		}
	}

	content := contentKey("oci\x00"+r.repo.String(), r.resolved.Digest)
	accessKey := content + "\x00" + r.creds.Key
	if a, ok := f.getContent(content); f.countLookup(agecache.CacheSource, ok && (r.confirmed || f.isConfirmed(accessKey))) {
		f.confirm(accessKey)
		out.Chart, out.Files = a.chart, a.files
		return out, a.links, nil
	}
	v, err := f.shared(ctx, namespace, "content\x00"+accessKey, func(ctx context.Context) (any, error) {
		if a, ok := f.getContent(content); ok {
			if !f.isConfirmed(accessKey) {
				if _, err := r.puller.Head(ctx, ref); err != nil {
					return nil, registryFailure(where+": confirming access to the manifest", err)
				}
			}
			f.confirm(accessKey)
			return a, nil
		}
		a, err := f.download(ctx, r, where, ref)
		if err != nil {
			return nil, err
		}
		f.putContent(content, a)
		f.confirm(accessKey)
		return a, nil
	})
	if err != nil {
		return nil, nil, err
	}
	a := v.(*artifact)
	out.Chart, out.Files = a.chart, a.files
	return out, a.links, nil
}

// download reads the manifest of ref and its chart or bundle layer
// (oci.Layer), and checks them (checkChart, unbundle).
func (f *Fetcher) download(ctx context.Context, r *ociResolution, where string, ref name.Digest) (*artifact, error) {
	limit := int64(f.opts.MaxArtifactBytes)
	data, isChart, err := oci.Layer(ctx, r.puller, ref, limit)
	if err != nil {
		return nil, ociFailure(where, err)
	}
	a := &artifact{}
	if isChart {
		if err := checkChart(where, data, limit); err != nil {
			return nil, err
		}
		a.chart = data
	} else if a.files, a.links, err = unbundle(where, data, limit); err != nil {
		return nil, err
	}
	return a, nil
}

// checkManifestSize refuses a manifest larger than the artifact limit
// before it is read.
func (f *Fetcher) checkManifestSize(where string, desc *v1.Descriptor) error {
	if limit := int64(f.opts.MaxArtifactBytes); desc.Size > limit {
		return sourcehttp.TooLarge(where+": the manifest", desc.Size, limit)
	}
	return nil
}

// repositoryOf parses oci://HOST[:PORT]/PATH (oci.Repository), refusing
// user information in it.
func repositoryOf(u string, allowPlainLoopback bool) (name.Repository, error) {
	if err := refuseUserinfo(u); err != nil {
		return name.Repository{}, err
	}
	repo, err := oci.Repository(u, allowPlainLoopback)
	if err != nil {
		return name.Repository{}, ociFailure("", err)
	}
	return repo, nil
}

// pullerFor returns the registry client of the registry of repo with
// creds, kept (with its tokens, per repository) per registry and
// credentials: a warm fetch pings the registry and asks its token service
// no more.
func (f *Fetcher) pullerFor(repo name.Repository, creds *credentials.Credentials) (*remote.Puller, error) {
	key := repo.RegistryStr() + "\x00" + creds.Key
	if p, ok := f.pullers.Get(key); ok {
		return p, nil
	}
	c := f.clientFor(creds.TLS, creds.TLSKey)
	p, err := remote.NewPuller(
		remote.WithTransport(c.Transport),
		remote.WithAuth(creds.Auth),
		remote.WithUserAgent(f.opts.UserAgent),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
	)
	if err != nil {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, err, "the registry client of %s", repo.RegistryStr())
	}
	f.pullers.Put(key, p)
	return p, nil
}

// ociReasons are the reasons of oci's own failures.
var ociReasons = map[oci.Kind]string{
	oci.KindInvalid:        sourcefailure.ReasonSourceInvalid,
	oci.KindUnsupported:    sourcefailure.ReasonArtifactUnsupported,
	oci.KindTooLarge:       sourcefailure.ReasonArtifactTooLarge,
	oci.KindDigestMismatch: sourcefailure.ReasonDigestMismatch,
}

// ociFailure is err, an *oci.Error of the artifact where ("" when the
// message names it), as a *failure.Error of its reason: the registry's
// own failures through registryFailure.
func ociFailure(where string, err error) error {
	e, ok := errors.AsType[*oci.Error](err)
	switch {
	case !ok:
		return err
	case e.Kind == oci.KindRegistry:
		return registryFailure(where+": "+e.Message, e.Err)
	case where == "":
		return failure.Quiet(ociReasons[e.Kind], e, "%s", e.Message)
	}
	return failure.Quiet(ociReasons[e.Kind], e, "%s: %s", where, e.Message)
}

// registryFailure classifies an error of the registry client: a refused
// address keeps its reason; an answer by its status (answerFailure); a
// manifest that does not hash to its digest is DigestMismatch; a redirect
// the client refused is AddressNotAllowed.
func registryFailure(what string, err error) error {
	if f, ok := failure.As(err); ok {
		return failure.Quiet(f.Reason, err, "%s: %s", what, f.Message)
	}
	if terr, ok := errors.AsType[*transport.Error](err); ok {
		return answerFailure(what, "registry", terr.StatusCode, err)
	}
	if errtext.DigestMismatch(err) {
		return failure.New(sourcefailure.ReasonDigestMismatch, err, "%s", what)
	}
	// The registry client refuses a redirect to a private or link-local
	// address literal itself, before the dialer would: the same refusal
	// as the address policy's, so the same reason.
	if errtext.RedirectRefused(err) {
		return failure.New(egress.ReasonAddressNotAllowed, err, "%s: the registry redirected to a private or link-local address, which is not allowed", what)
	}
	return answerFailure(what, "registry", 0, err)
}

// answerFailure classifies the failure of a request to a server (a
// "registry", a "repository") that answered with status (0: none): 401 and
// 403 are SourceUnauthorized, 404 ArtifactNotFound, any other answer and
// the network SourceUnreachable.
func answerFailure(what, server string, status int, err error) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return failure.New(sourcefailure.ReasonSourceUnauthorized, err, "%s: the %s refused the credentials", what, server)
	case status == http.StatusNotFound:
		return failure.New(sourcefailure.ReasonArtifactNotFound, err, "%s: not found", what)
	case status != 0:
		return failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s: the %s failed", what, server)
	}
	if netFail := egress.NetworkFailure(err); netFail != "" {
		return failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s: the %s is unreachable (%s)", what, server, netFail)
	}
	return failure.New(sourcefailure.ReasonSourceUnreachable, err, "%s", what)
}
