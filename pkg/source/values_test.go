package source

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/revision"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
	"github.com/kumodo/convoy-apiserver/pkg/verify"
)

// valuesRel is a Release of shop whose chart is a ConfigMap and whose
// values source is vs.
func valuesRel(vs *convoyv1alpha1.ValuesSource) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "chart"}}, ValuesSource: vs}}
}

// A Git values source is fetched as a Git source is, at its own ref
// whatever revision ctx asks of spec.source, and shares its listings
// with a spec.source of the same URL and credentials; a moved branch
// resolves to its new commit.
func TestFetchValuesGit(t *testing.T) {
	g := startGit(t, gitserver.Options{})
	first := g.commit(t, "main", map[string]string{"envs/prod/values.yaml": "replicas: 3", "chart/Chart.yaml": "name: web"})
	f, clk := newFetcher(t)
	gitSrc := convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "envs"}
	rel := gitRelease(convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "chart"})
	rel.Spec.ValuesSource = &convoyv1alpha1.ValuesSource{Git: &gitSrc}

	_, err := f.Fetch(context.Background(), rel, inputsOf())
	require.NoError(t, err)
	listings, fetches := g.server.Listings(), g.server.Fetches()

	// A revision of ctx is spec.source's: not applied to the values source.
	ctx := revision.With(context.Background(), "no-such-branch")
	src, err := f.FetchValues(ctx, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "envs", src.Path)
	assert.Contains(t, fileNames(src), "envs/prod/values.yaml")
	require.NotNil(t, src.Resolved)
	assert.Equal(t, first, src.Resolved.Commit)
	assert.Equal(t, listings, g.server.Listings(), "the listing of spec.source's URL and credentials is shared")
	assert.Equal(t, fetches, g.server.Fetches(), "the commit fetched for spec.source is served from the content cache")

	digest, err := f.ResolveValues(ctx, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "git:"+first, digest)

	moved := g.commit(t, "main", map[string]string{"envs/prod/values.yaml": "replicas: 5"})
	clk.SetTime(clk.Now().Add(DefaultResolveMaxAge + time.Second))
	digest, err = f.ResolveValues(ctx, rel, inputsOf())
	require.NoError(t, err)
	assert.Equal(t, "git:"+moved, digest, "a moved values branch resolves to its new commit")
}

// An OCI bundle values source, through its CA Secret and its path; a Helm
// chart is refused.
func TestFetchValuesOCI(t *testing.T) {
	reg := startRegistry(t, ociregistry.Options{TLS: true})
	ctx := context.Background()
	_, err := reg.PushBundle(ctx, "values/web", "v1", map[string]string{"envs/prod/values.yaml": "replicas: 3"})
	require.NoError(t, err)
	f, _ := newFetcher(t)
	inputs := inputsOf(secret("ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": reg.CA()}))
	ca := &convoyv1alpha1.LocalObjectReference{Name: "ca"}
	rel := valuesRel(&convoyv1alpha1.ValuesSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: reg.URL("values/web"), Tag: "v1", Path: "envs", CertSecretRef: ca}})
	src, err := f.FetchValues(ctx, rel, inputs)
	require.NoError(t, err)
	assert.Equal(t, "envs", src.Path)
	assert.Equal(t, []string{"envs/prod/values.yaml"}, fileNames(src))
	require.NotNil(t, src.Resolved)
	assert.Equal(t, KindOCIRepository, src.Resolved.Kind)

	// Without the CA: the failure names spec.valuesSource and keeps its reason.
	rel.Spec.ValuesSource.OCIRepository.CertSecretRef = nil
	_, err = f.FetchValues(ctx, rel, inputs)
	ferr, ok := failure.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, sourcefailure.ReasonSourceUnreachable, ferr.Reason)
	assert.True(t, strings.HasPrefix(ferr.Message, "spec.valuesSource: "), ferr.Message)
	assert.Contains(t, ferr.Message, "certificate")
}

// Every refusal names spec.valuesSource, and so does the cause a condition
// shows (failure.Cause); the source that failed keeps its reason.
func TestFetchValuesRefusals(t *testing.T) {
	g := startGit(t, gitserver.Options{})
	g.commit(t, "main", map[string]string{"values.yaml": "a: 1"})
	chartCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "packaged"}, BinaryData: map[string][]byte{ChartKey: []byte("tgz")}}
	for _, tc := range []struct {
		name    string
		vs      *convoyv1alpha1.ValuesSource
		reason  string
		message string
	}{
		{"not set", nil, sourcefailure.ReasonSourceInvalid, "spec.valuesSource is not set"},
		{"no kind", &convoyv1alpha1.ValuesSource{}, sourcefailure.ReasonSourceInvalid, "spec.valuesSource sets no source kind"},
		{"two kinds", &convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "a"}, Git: &convoyv1alpha1.GitRepositorySource{URL: g.url}},
			sourcefailure.ReasonSourceInvalid, "spec.valuesSource sets more than one source kind: configMap, git"},
		{"missing ConfigMap", &convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "nope"}},
			sourcefailure.ReasonSourceNotFound, "spec.valuesSource: source ConfigMap shop/nope not found"},
		{"a packaged chart", &convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "packaged"}},
			sourcefailure.ReasonSourceInvalid, "spec.valuesSource: ConfigMap shop/packaged binaryData chart.tgz is a packaged Helm chart"},
		{"missing branch", &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "nope"}}},
			sourcefailure.ReasonArtifactNotFound, "spec.valuesSource: "},
		{"path leaving the root", &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: "main"}, Path: "../x"}},
			sourcefailure.ReasonSourceInvalid, "spec.valuesSource: "},
		{"address refused", &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://10.0.0.1/apps.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}}},
			"", "spec.valuesSource: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newFetcher(t)
			for _, call := range []func() error{
				func() error {
					_, err := f.FetchValues(context.Background(), valuesRel(tc.vs), inputsOf(chartCM))
					return err
				},
				func() error {
					_, err := f.ResolveValues(context.Background(), valuesRel(tc.vs), inputsOf(chartCM))
					return err
				},
			} {
				err := call()
				if err == nil && (tc.vs.ConfigMap != nil || tc.vs.Git.Path != "") {
					continue // resolving reads no ConfigMap and checks no path: the fetch does
				}
				require.Error(t, err)
				ferr, ok := failure.As(err)
				require.True(t, ok, "not a failure: %v", err)
				if tc.reason != "" {
					assert.Equal(t, tc.reason, ferr.Reason, ferr.Message)
				}
				assert.True(t, strings.HasPrefix(ferr.Message, tc.message), ferr.Message)
				// What pkg/drift shows: the outermost failure of the cause's reason.
				cause, _ := failure.Cause(err)
				shown, _ := failure.Find(err, cause.Reason)
				assert.True(t, strings.HasPrefix(shown.Message, "spec.valuesSource"), "the cause names it too: %s", shown.Message)
			}
		})
	}
}

// A Git values source that asks for signatures is served only from a
// commit signed by a key of its Secret, as spec.source is; an unsigned one
// is SignatureUnverified, named as the values source's.
func TestFetchValuesGitVerify(t *testing.T) {
	g := startSignedGit(t)
	g.commitBy(t, g.ci, "signed", map[string]string{"values.yaml": "a: 1"})
	g.commitBy(t, nil, "unsigned", map[string]string{"values.yaml": "a: 2"})
	inputs := inputsOf(secret("keys", corev1.SecretTypeOpaque, map[string][]byte{"ci.pub": g.pub["ci.pub"]}))
	f, _ := newFetcher(t)
	rel := func(branch string) *convoyv1alpha1.Release {
		return valuesRel(&convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: g.url, Ref: convoyv1alpha1.GitReference{Branch: branch},
			Verify: &convoyv1alpha1.GitVerification{SecretRef: convoyv1alpha1.LocalObjectReference{Name: "keys"}}}})
	}
	src, err := f.FetchValues(context.Background(), rel("signed"), inputs)
	require.NoError(t, err)
	require.NotNil(t, src.Resolved.Verified, "the signature is recorded")

	_, err = f.FetchValues(context.Background(), rel("unsigned"), inputs)
	ferr, ok := failure.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, verify.ReasonSignatureUnverified, ferr.Reason)
	assert.True(t, strings.HasPrefix(ferr.Message, "spec.valuesSource: "), ferr.Message)
}
