package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/bounded"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/helmrepo"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcehttp"
)

// helmResolution is a Helm repository source resolved to a chart version.
type helmResolution struct {
	base     *url.URL
	creds    *credentials.Credentials
	client   *sourcehttp.Client
	chartURL string
	resolved *subresourcesv1alpha1.ResolvedSource
}

// resolveHelm reads the index (kept for ResolveMaxAge per URL and
// credentials) and picks the version.
func (f *Fetcher) resolveHelm(ctx context.Context, namespace string, src *convoyv1alpha1.HelmRepositorySource, inputs Inputs) (*helmResolution, error) {
	if err := refuseUserinfo(src.URL); err != nil {
		return nil, err
	}
	base, err := url.Parse(strings.TrimSuffix(src.URL, "/") + "/")
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s is not an http(s) URL of a repository", src.URL)
	}
	creds, err := credentials.Repository(ctx, releaseSecrets{inputs: inputs, namespace: namespace}, namespace, src)
	if err != nil {
		return nil, err
	}
	r := &helmResolution{base: base, creds: creds, client: f.clientFor(creds.TLS, creds.TLSKey)}
	key := "helm\x00" + base.String() + "\x00" + creds.Key
	since := f.freshAfter(ctx)
	idx, ok := f.getIndex(key, since)
	if !f.countLookup(agecache.CacheResolve, ok) {
		v, err := f.shared(ctx, namespace, "index\x00"+key+freshFlight(since), func(ctx context.Context) (any, error) {
			if idx, ok := f.getIndex(key, since); ok {
				return idx, nil
			}
			indexURL := base.ResolveReference(&url.URL{Path: "index.yaml"}).String()
			data, err := f.request(ctx, r, http.MethodGet, indexURL, int64(f.opts.MaxIndexBytes), "the index")
			if err != nil {
				return nil, err
			}
			idx, err := helmrepo.Parse(src.URL, data)
			if err != nil {
				return nil, indexFailure(err)
			}
			f.putIndex(key, idx)
			return idx, nil
		})
		if err != nil {
			return nil, err
		}
		idx = v.(*helmrepo.Index)
	}
	entry, err := helmrepo.Pick(src.URL, src.Chart, src.Version, idx.Versions(src.Chart))
	if err != nil {
		return nil, indexFailure(err)
	}
	digest := strings.TrimPrefix(entry.Digest, "sha256:")
	if _, err := hex.DecodeString(digest); err != nil || len(digest) != 64 {
		return nil, failure.New(sourcefailure.ReasonArtifactUnsupported, nil, "%s: chart %s version %s has no sha256 digest in the index: it cannot be verified", src.URL, src.Chart, entry.Version)
	}
	if len(entry.URLs) == 0 {
		return nil, failure.New(sourcefailure.ReasonArtifactUnsupported, nil, "%s: chart %s version %s has no URL in the index", src.URL, src.Chart, entry.Version)
	}
	ref, err := url.Parse(entry.URLs[0])
	if err != nil {
		return nil, failure.New(sourcefailure.ReasonArtifactUnsupported, err, "%s: chart %s version %s: its URL", src.URL, src.Chart, entry.Version)
	}
	r.chartURL = base.ResolveReference(ref).String()
	r.resolved = &subresourcesv1alpha1.ResolvedSource{Kind: KindHelmRepository, URL: src.URL, Chart: src.Chart, Version: entry.Version, Digest: "sha256:" + digest}
	return r, nil
}

// helm fetches a chart of a Helm repository: it resolves it (resolveHelm),
// gets the chart archive (helmChart) and, when the source asks for it,
// verifies it by its provenance file before it is served (verifyHelm).
func (f *Fetcher) helm(ctx context.Context, namespace string, src *convoyv1alpha1.HelmRepositorySource, inputs Inputs) (*Source, error) {
	r, err := f.resolveHelm(ctx, namespace, src, inputs)
	if err != nil {
		return nil, err
	}
	out := &Source{Where: fmt.Sprintf("%s chart %s %s (%s)", src.URL, src.Chart, r.resolved.Version, r.resolved.Digest), Resolved: r.resolved}
	chart, err := f.helmChart(ctx, namespace, r, out.Where)
	if err != nil {
		return nil, err
	}
	if src.Verify != nil {
		if out.Resolved.Verified, err = f.verifyHelm(ctx, namespace, src, inputs, r, chart, out.Where); err != nil {
			return nil, err
		}
	}
	out.Chart = chart
	return out, nil
}

// helmChart downloads the chart archive of r from the entry's URL
// (credentials only to the repository's own origin) and checks it against
// the entry's digest. A chart in the content cache is used only when it
// was downloaded from the URL of the entry (an index that lists a known
// digest at a URL of its own gets a download from there), and once the
// repository confirmed (a HEAD) that these credentials may read it.
func (f *Fetcher) helmChart(ctx context.Context, namespace string, r *helmResolution, where string) ([]byte, error) {
	content := contentKey("helm\x00"+r.chartURL, r.resolved.Digest)
	accessKey := content + "\x00" + r.creds.Key
	if a, ok := f.getContent(content); f.countLookup(agecache.CacheSource, ok && f.isConfirmed(accessKey)) {
		return a.chart, nil
	}
	v, err := f.shared(ctx, namespace, "content\x00"+accessKey, func(ctx context.Context) (any, error) {
		if a, ok := f.getContent(content); ok {
			if !f.isConfirmed(accessKey) {
				if _, err := f.request(ctx, r, http.MethodHead, r.chartURL, 0, "confirming access to the chart"); err != nil {
					return nil, err
				}
				f.confirm(accessKey)
			}
			return a, nil
		}
		data, err := f.request(ctx, r, http.MethodGet, r.chartURL, int64(f.opts.MaxArtifactBytes), "the chart")
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != r.resolved.Digest {
			return nil, failure.New(sourcefailure.ReasonDigestMismatch, nil, "%s: the chart %s is %s, not the digest of the index", where, r.chartURL, got)
		}
		if err := checkChart(where, data, int64(f.opts.MaxArtifactBytes)); err != nil {
			return nil, err
		}
		a := &artifact{chart: data}
		f.putContent(content, a)
		f.confirm(accessKey)
		return a, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*artifact).chart, nil
}

// request sends method to u and reads the answer, at most limit bytes (a
// Content-Length above it is refused before the body is read). The
// credentials go only to the repository's own origin (scheme, host, port).
func (f *Fetcher) request(ctx context.Context, r *helmResolution, method, u string, limit int64, what string) ([]byte, error) {
	c, creds, base := r.client, r.creds, r.base
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, err, "%s: %s", u, what)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	if creds.Username != "" && req.URL.Scheme == base.Scheme && req.URL.Host == base.Host {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, repositoryFailure(fmt.Sprintf("%s: %s", u, what), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, repositoryFailure(fmt.Sprintf("%s: %s", u, what), &sourcehttp.NotOKError{Status: resp.StatusCode, URL: u})
	}
	if method == http.MethodHead {
		return nil, nil
	}
	tooLargeErr := func() error {
		if what == "the index" {
			return failure.New(sourcefailure.ReasonIndexTooLarge, nil, "%s: the index is larger than the limit of %d bytes (--max-index-bytes)", u, limit)
		}
		return sourcehttp.TooLarge(u+": "+what, -1, limit)
	}
	if resp.ContentLength > limit {
		return nil, tooLargeErr()
	}
	data, err := bounded.ReadAll(resp.Body, limit, tooLargeErr)
	if f, ok := failure.As(err); ok {
		return nil, f
	}
	if err != nil {
		return nil, repositoryFailure(fmt.Sprintf("%s: %s", u, what), err)
	}
	return data, nil
}

// repositoryFailure classifies an error of a repository request: a
// refused address keeps its reason; an answer by its status
// (answerFailure).
func repositoryFailure(what string, err error) error {
	if f, ok := failure.As(err); ok {
		return failure.Quiet(f.Reason, err, "%s: %s", what, f.Message)
	}
	status := 0
	if notOK, ok := errors.AsType[*sourcehttp.NotOKError](err); ok {
		status = notOK.Status
	}
	return answerFailure(what, "repository", status, err)
}

// indexReasons are the reasons of the refusals of an index.
var indexReasons = map[helmrepo.Kind]string{
	helmrepo.KindUnsupported: sourcefailure.ReasonArtifactUnsupported,
	helmrepo.KindNotFound:    sourcefailure.ReasonArtifactNotFound,
	helmrepo.KindTooLarge:    sourcefailure.ReasonIndexTooLarge,
	helmrepo.KindInvalid:     sourcefailure.ReasonSourceInvalid,
}

// indexFailure is err, a *helmrepo.Error, as a *failure.Error of its
// reason.
func indexFailure(err error) error {
	if e, ok := errors.AsType[*helmrepo.Error](err); ok {
		return failure.Quiet(indexReasons[e.Kind], e, "%s", e.Message)
	}
	return err
}
