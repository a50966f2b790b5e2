package source

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// A source URL with user information is refused before anything is
// fetched or resolved, and no message holds the credentials.
func TestSourceURLUserinfo(t *testing.T) {
	f, _ := newFetcher(t)
	dialed := loopbackOnly(t, f)
	for _, release := range []*convoyv1alpha1.Release{
		helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "https://alice:s3cr3t@127.0.0.1:1/charts", Chart: "web"}),
		helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "http://alice@127.0.0.1:1", Chart: "web"}),
		helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "https://alice:s3%zzcr3t@127.0.0.1:1", Chart: "web"}),
		ociRelease(convoyv1alpha1.OCIRepositorySource{URL: "oci://alice:s3cr3t@127.0.0.1:1/charts/web", Tag: "1"}),
		ociRelease(convoyv1alpha1.OCIRepositorySource{URL: "oci://alice:s3cr3t@127.0.0.1:1/charts/web", Digest: "sha256:" + sha256Hex(nil)[7:]}),
	} {
		ferr := fetchErr(t, f, release, inputsOf(), sourcefailure.ReasonSourceInvalid)
		assert.Contains(t, ferr.Message, "127.0.0.1:1")
		assert.Contains(t, ferr.Message, "must not hold credentials (user:password@): use secretRef")
		_, err := f.Resolve(context.Background(), release, inputsOf())
		assert.Equal(t, sourcefailure.ReasonSourceInvalid, failure.ReasonOf(err))
		for _, msg := range []string{ferr.Message, ferr.Error(), err.Error()} {
			assert.NotContains(t, msg, "s3")
			assert.NotContains(t, msg, "alice")
		}
	}
	assert.Empty(t, dialed.taken(), "refused before any connection")
}
