// Package source fetches the source of a Release, as its identity: a
// ConfigMap of its namespace, an OCI artifact, a chart of a Helm repository
// or a commit of a Git repository, resolved once to a digest or a commit
// and fetched by it, with the Release's own credentials, through the
// address policy, within limits and in slots the whole server shares;
// pkg/verify checks the signatures a Release asks for. How, and what a
// fleet shares without one tenant reading another's artifact:
// docs/contributors/internals.md, "Sources".
package source

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/flight"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/helmrepo"
	"github.com/kumodo/convoy-apiserver/pkg/kustomize"
	"github.com/kumodo/convoy-apiserver/pkg/manifest"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
	"github.com/kumodo/convoy-apiserver/pkg/sigstoreroot"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcehttp"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// ChartKey is the binaryData key of a source ConfigMap that holds a
// packaged chart.
const ChartKey = "chart.tgz"

// Kinds of a ResolvedSource.
const (
	KindOCIRepository  = "OCIRepository"
	KindHelmRepository = "HelmRepository"
)

// Defaults of Options.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxArtifactBytes = 32 << 20
	DefaultMaxIndexBytes    = 32 << 20
	DefaultConcurrency      = 8
	DefaultPerNamespace     = 2
	DefaultCacheBytes       = 128 << 20
	DefaultResolveMaxAge    = time.Minute
	DefaultMaxGitBytes      = 64 << 20
	DefaultMaxGitRefs       = 10_000
)

// Options configure a Fetcher. Zero fields take their defaults.
type Options struct {
	// Policy refuses the addresses no source may reach, after DNS
	// resolution (AllowLoopback for local development only). NewFetcher
	// sets its DenyPrivate (from AllowPrivate) and the flags its refusals
	// name: the sources' own, not the Clusters'.
	Policy egress.AddressPolicy
	// AllowPrivate lets sources reach the private ranges
	// (egress.PrivateRanges; --allow-private-sources). Off, a Release's
	// URL, a tenant's choice, cannot reach the cluster's own network (its
	// Services, Pods, nodes, control plane): neither its answers nor the
	// error of a probe tell what listens there.
	AllowPrivate bool
	// Timeout bounds one fetch: resolving, downloading and verifying
	// (--fetch-timeout).
	Timeout time.Duration
	// MaxArtifactBytes bounds a manifest, a blob, a chart archive, and what
	// a chart or a bundle of manifests inflates to and what its files claim
	// (--max-artifact-bytes).
	MaxArtifactBytes int
	// MaxIndexBytes bounds a Helm repository's index (--max-index-bytes).
	MaxIndexBytes int
	// Concurrency is how many requests to registries and repositories run
	// at once, the loops and the subresources together
	// (--max-concurrent-fetches).
	Concurrency int
	// PerNamespace is how many of them the Releases of one namespace hold
	// at once (--max-concurrent-fetches-per-namespace), so that one
	// tenant's slow registry leaves slots to the others.
	PerNamespace int
	// CacheBytes bounds the artifacts kept by digest (--source-cache-bytes);
	// negative: no cache at all, every fetch resolves and downloads.
	CacheBytes int
	// ResolveMaxAge is how long a tag or an index is reused for the same
	// URL and credentials, and an identity's access to a cached artifact
	// is taken as confirmed (--source-resolve-max-age).
	ResolveMaxAge time.Duration
	// MaxGitBytes bounds what one Git fetch receives and stores (the
	// objects of the commit, inflated) and what one answer of a Git server
	// holds (--max-git-bytes).
	MaxGitBytes int
	// MaxGitRefs bounds the refs a Git server may advertise
	// (--max-git-refs).
	MaxGitRefs int
	// UserAgent is sent with every request.
	UserAgent string
	// Signatures bound the signatures read to verify an artifact
	// (cosign.Limits; zero: its defaults).
	Signatures cosign.Limits
	// PublicSigstore lets keyless verifications without a
	// trustedRootSecretRef use the public Sigstore trust root, fetched from
	// SigstoreMirror through this policy and kept in memory
	// (--sigstore-public-trust-root).
	PublicSigstore bool
	// SigstoreMirror is the public instance's TUF repository (empty: its
	// own; --sigstore-tuf-mirror).
	SigstoreMirror string
	// PublicTrustRoot gives the public trust root in place of the one
	// PublicSigstore fetches (tests); nil with PublicSigstore off: none.
	PublicTrustRoot PublicTrustRoot
	// Clock is the caches' clock; nil: the real one.
	Clock clock.PassiveClock
}

func (o Options) withDefaults() Options {
	o.Policy.DenyPrivate = !o.AllowPrivate
	o.Policy.Flags = egress.Flags{Loopback: "--allow-loopback-sources", Private: "--allow-private-sources"}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxArtifactBytes <= 0 {
		o.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.PerNamespace <= 0 {
		o.PerNamespace = DefaultPerNamespace
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.ResolveMaxAge <= 0 {
		o.ResolveMaxAge = DefaultResolveMaxAge
	}
	if o.MaxGitBytes <= 0 {
		o.MaxGitBytes = DefaultMaxGitBytes
	}
	if o.MaxGitRefs <= 0 {
		o.MaxGitRefs = DefaultMaxGitRefs
	}
	if o.UserAgent == "" {
		o.UserAgent = egress.UserAgent
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Source is what a Release's source holds: a packaged chart, or a
// directory of files (a ConfigMap's keys, a bundle's files) of which the
// render reads the one at Path.
type Source struct {
	// Where names the source in messages: "ConfigMap NS/NAME binaryData
	// chart.tgz", "oci://HOST/PATH@sha256:...".
	Where string
	// Chart is a packaged Helm chart; nil for files.
	Chart []byte
	// Files are the files of the source: the data and binaryData keys of a
	// ConfigMap (but chart.tgz), in key order; the regular files of a
	// bundle, in path order, their names relative to its root.
	Files []File
	// Path is the directory of Files the Release renders: "" for the root
	// (always, for a ConfigMap); a clean relative path (CleanPath).
	Path string
	// Omitted are files of the source outside Path that were left out of
	// Files to keep them within --max-artifact-bytes (a Git commit), by
	// name: a render that needs one fails with ArtifactTooLarge.
	Omitted []string
	// Links are the links of the source outside Path (a bundle's symbolic
	// and hard links, a commit's symbolic links and submodules), by name,
	// which are not in Files: a render that needs one fails with
	// LinkUnsupported. A link under Path fails the fetch.
	Links []string
	// Resolved is the artifact fetched, for a registry or a repository.
	Resolved *subresourcesv1alpha1.ResolvedSource
}

// File is one file of a source.
type File struct {
	// Name is the key of the ConfigMap, or the path in the bundle (clean,
	// relative, with /); its ending tells YAML from JSON.
	Name string
	// Where names the file in messages: "ConfigMap NS/NAME key a.yaml".
	Where string
	Data  []byte
}

// CleanPath checks a directory a Release names in a source of files
// (spec.source.ociRepository.path) and returns it clean: "" for the root.
// A leading / or a .. element is SourceInvalid (the CRD refuses them; this
// check is for a Release stored before that rule, or written by a client
// that skips it).
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
		return "", failure.New(sourcefailure.ReasonSourceInvalid, nil, "path %q must be relative to the source's root: no leading / and no .. element", p)
	}
	if c := path.Clean(p); c != "." {
		return c, nil
	}
	return "", nil
}

// Fetcher fetches sources. It is safe for concurrent use; one Fetcher
// serves the loops and the subresources, so its caches and slots are
// shared. There is no package-level Fetcher: its caches and slots are
// bounded by flags, so the composition root (pkg/apiserver) builds the one
// of convoy-apiserver from them and passes it down, and tests and tools
// build their own.
type Fetcher struct {
	opts Options
	// contents are artifacts by origin and digest (contentKey);
	// resolutions are digests (OCI) and indexes (Helm) by URL and
	// credentials; confirmed are the (origin, digest, credentials) whose
	// access the registry or repository confirmed.
	contents    *agecache.Cache[string, *artifact]
	resolutions *agecache.Cache[string, string]
	indexes     *agecache.Cache[string, *helmrepo.Index]
	confirmed   *agecache.Cache[string, bool]
	// gitListings are Git ref listings by URL and credentials.
	gitListings *agecache.Cache[string, git.Refs]
	clients     *agecache.Cache[string, *sourcehttp.Client]
	pullers     *agecache.Cache[string, *remote.Puller]
	// verifier verifies the signatures a Release asks for and keeps the
	// verdicts (verifyOCI, verifyGit).
	verifier *verify.Verifier
	// flights share the requests in flight, each in a slot (shared).
	flights *flight.Group
	// dialControl, when set, is the dialers' Control in place of the
	// policy's: the tests set one that asks the policy and then refuses
	// any address off loopback, so a policy that lets an address through
	// fails a test without a packet sent there.
	dialControl func(network, address string, c syscall.RawConn) error
}

// NewFetcher returns a Fetcher.
func NewFetcher(opts Options) *Fetcher {
	opts = opts.withDefaults()
	f := &Fetcher{opts: opts, flights: flight.New(flight.Options{
		Slots: opts.Concurrency, PerNamespace: opts.PerNamespace,
		Timeout: opts.Timeout, TimeoutCause: errFetchTimeout,
		Solo:    opts.CacheBytes <= 0,
		Running: fetchesRunning, Waiting: fetchesWaiting,
	})}
	verdicts := verify.Options{Signatures: opts.Signatures, Clock: opts.Clock}
	if opts.CacheBytes > 0 {
		const entries = 4096
		f.contents = agecache.New[string, *artifact](opts.CacheBytes, 24*time.Hour, opts.Clock, (*artifact).size)
		f.resolutions = agecache.New[string, string](entries, opts.ResolveMaxAge, opts.Clock, nil)
		f.indexes = agecache.New[string, *helmrepo.Index](max(opts.MaxIndexBytes, opts.CacheBytes/4), opts.ResolveMaxAge, opts.Clock, (*helmrepo.Index).Size)
		f.confirmed = agecache.New[string, bool](entries*4, opts.ResolveMaxAge, opts.Clock, nil)
		f.gitListings = agecache.New[string, git.Refs](max(opts.MaxIndexBytes, opts.CacheBytes/4), opts.ResolveMaxAge, opts.Clock, git.Refs.Size)
		verdicts.MaxAge = opts.ResolveMaxAge
	}
	f.verifier = verify.New(verdicts)
	// Clients (their connections, and a registry's tokens) are kept per
	// host and credentials whatever the cache.
	f.clients = agecache.New[string, *sourcehttp.Client](1024, 10*time.Minute, opts.Clock, nil)
	f.pullers = agecache.New[string, *remote.Puller](1024, 10*time.Minute, opts.Clock, nil)
	if opts.PublicSigstore && opts.PublicTrustRoot == nil {
		f.opts.PublicTrustRoot = sigstoreroot.New(sigstoreroot.Options{
			Client: f.clientFor(nil, "sigstore").HTTP, Mirror: opts.SigstoreMirror, Timeout: opts.Timeout,
			Fetched: countTrustRootFetch,
		})
	}
	return f
}

// Limits returns the Fetcher's options, with their defaults.
func (f *Fetcher) Limits() Options { return f.opts }

// errFetchTimeout is the cause of the deadline of a fetch.
var errFetchTimeout = errors.New("fetch timeout")

// Fetch fetches the source of release: spec.source.configMap,
// spec.source.ociRepository, spec.source.helmRepository or spec.source.git, reading what it
// needs from the Release's namespace with inputs (as its identity). Every
// error is a *failure.Error but park.ErrParked (a caller with a park.Spot
// whose request did not end within its grace: see shared).
func (f *Fetcher) Fetch(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (*Source, error) {
	out, err := f.fetch(ctx, release, inputs)
	if fresh, again := f.freshRevision(ctx, err); again {
		out, err = f.fetch(fresh, release, inputs)
	}
	if !errors.Is(err, park.ErrParked) { // no outcome yet
		fetches.WithLabelValues(kindLabel(release.Spec.Source), outcomeOf(err)).Inc()
	}
	return out, err
}

// setKinds names the fields of spec.source that are set; a valid source
// sets one.
func setKinds(src convoyv1alpha1.ReleaseSource) []string {
	var kinds []string
	if src.ConfigMap != nil {
		kinds = append(kinds, "configMap")
	}
	if src.HelmRepository != nil {
		kinds = append(kinds, "helmRepository")
	}
	if src.OCIRepository != nil {
		kinds = append(kinds, "ociRepository")
	}
	if src.Git != nil {
		kinds = append(kinds, "git")
	}
	return kinds
}

// kindLabel is the kind of src as the metrics name it: the field of
// spec.source that is set, "invalid" when none or several are.
func kindLabel(src convoyv1alpha1.ReleaseSource) string {
	if kinds := setKinds(src); len(kinds) == 1 {
		return kinds[0]
	}
	return "invalid"
}

func (f *Fetcher) fetch(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (*Source, error) {
	src := release.Spec.Source
	set := setKinds(src)
	switch {
	case len(set) == 0:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "spec.source sets no source kind")
	case len(set) > 1:
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "spec.source sets more than one source kind: %s", strings.Join(set, ", "))
	}
	src, err := atRevision(ctx, src)
	if err != nil {
		return nil, countRefusal(err)
	}
	if src.ConfigMap != nil {
		out, err := configMap(ctx, release.Namespace, src.ConfigMap.Name, inputs)
		if err != nil {
			return nil, err
		}
		if out.Chart != nil {
			if err := checkChart(out.Where, out.Chart, int64(f.opts.MaxArtifactBytes)); err != nil {
				return nil, countRefusal(err)
			}
		}
		return out, nil
	}

	// The requests to the registry or repository take their slots
	// (shared), not the fetch as a whole.
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.Timeout, errFetchTimeout)
	defer cancel()
	var out *Source
	switch {
	case src.OCIRepository != nil:
		out, err = f.oci(ctx, release.Namespace, src.OCIRepository, inputs)
	case src.Git != nil:
		out, err = f.git(ctx, release.Namespace, src.Git, inputs)
	default:
		out, err = f.helm(ctx, release.Namespace, src.HelmRepository, inputs)
	}
	if err != nil {
		return nil, countRefusal(f.timedOut(ctx, err))
	}
	return out, nil
}

// timedOut is err, or FetchTimeout when ctx ended at the fetch timeout.
func (f *Fetcher) timedOut(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errFetchTimeout) {
		return failure.New(sourcefailure.ReasonFetchTimeout, nil, "fetching the source took longer than the fetch timeout of %s (--fetch-timeout) and was stopped", f.opts.Timeout)
	}
	return err
}

// Resolve returns the digest the source of release resolves to now: a
// digest of spec, a tag resolved with a HEAD of the manifest, a version of a
// Helm repository's index; "" for a ConfigMap. It shares Fetch's caches, so
// it costs a request per URL, tag or index and credentials per
// ResolveMaxAge at most: what the render cache keys a render by. Its
// requests take slots as Fetch's do.
func (f *Fetcher) Resolve(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (string, error) {
	digest, err := f.resolve(ctx, release, inputs)
	if fresh, again := f.freshRevision(ctx, err); again {
		digest, err = f.resolve(fresh, release, inputs)
	}
	if kind := kindLabel(release.Spec.Source); kind != "configMap" && kind != "invalid" && !errors.Is(err, park.ErrParked) {
		resolves.WithLabelValues(kind, outcomeOf(err)).Inc()
	}
	return digest, err
}

func (f *Fetcher) resolve(ctx context.Context, release *convoyv1alpha1.Release, inputs Inputs) (string, error) {
	src, err := atRevision(ctx, release.Spec.Source)
	if err != nil {
		return "", countRefusal(err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.opts.Timeout, errFetchTimeout)
	defer cancel()
	switch {
	case src.OCIRepository != nil && src.ConfigMap == nil && src.HelmRepository == nil && src.Git == nil:
		r, err := f.resolveOCI(ctx, release.Namespace, src.OCIRepository, inputs)
		if err != nil {
			return "", countRefusal(f.timedOut(ctx, err))
		}
		return r.resolved.Digest, nil
	case src.HelmRepository != nil && src.ConfigMap == nil && src.OCIRepository == nil && src.Git == nil:
		r, err := f.resolveHelm(ctx, release.Namespace, src.HelmRepository, inputs)
		if err != nil {
			return "", countRefusal(f.timedOut(ctx, err))
		}
		return r.resolved.Digest, nil
	case src.Git != nil && src.ConfigMap == nil && src.OCIRepository == nil && src.HelmRepository == nil:
		r, err := f.resolveGit(ctx, release.Namespace, src.Git, inputs)
		if err != nil {
			return "", countRefusal(f.timedOut(ctx, err))
		}
		return "git:" + r.commit, nil
	}
	return "", nil
}

// refuseUserinfo refuses a source URL with user information
// (https://user:password@host): the URL is printed in messages, Events and
// resolvedSource, so a password in it would be too. The CRD refuses such a
// URL; this check is for a Release stored before that rule. The message
// holds the URL without its user information, so neither the password nor
// the user name is printed.
func refuseUserinfo(rawURL string) error {
	redacted, had := redact.URL(rawURL)
	if !had {
		return nil
	}
	return failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: the URL must not hold credentials (user:password@): use secretRef", redacted)
}

// configMap reads a source ConfigMap: a packaged chart in binaryData
// chart.tgz, else its keys as files of one directory, in key order: data
// and binaryData (a kustomization's generators may read binary files). It
// must hold a kustomization or a key ending .yaml, .yml or .json.
func configMap(ctx context.Context, namespace, name string, inputs Inputs) (*Source, error) {
	where := convoyv1alpha1.ObjectKey{Kind: "ConfigMap", Namespace: namespace, Name: name}.Describe()
	cm, err := inputs.ConfigMap(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, failure.Quiet(sourcefailure.ReasonSourceNotFound, err, "source %s not found", where)
	case apierrors.IsForbidden(err):
		return nil, failure.New(sourcefailure.ReasonInputForbidden, err, "source %s may not be read", where)
	case err != nil:
		return nil, sourcefailure.Unavailable(err, "source %s could not be read", where)
	}
	if tgz, ok := cm.BinaryData[ChartKey]; ok {
		return &Source{Where: fmt.Sprintf("%s binaryData %s", where, ChartKey), Chart: tgz}, nil
	}
	files := make([]File, 0, len(cm.Data)+len(cm.BinaryData))
	usable := false
	for k, v := range cm.Data {
		files = append(files, File{Name: k, Where: where + " key " + k, Data: []byte(v)})
		usable = usable || manifest.IsFile(k) || slices.Contains(kustomize.FileNames, k)
	}
	for k, v := range cm.BinaryData {
		files = append(files, File{Name: k, Where: where + " binaryData key " + k, Data: v})
	}
	if !usable {
		return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "source %s holds neither binaryData %s, nor a kustomization, nor a data key ending .yaml, .yml or .json", where, ChartKey)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return &Source{Where: where, Files: files}, nil
}
