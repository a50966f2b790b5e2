package source

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// withoutUserinfo finds user information where net/url does, also in a
// URL that does not parse.
func TestWithoutUserinfo(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		had      bool
	}{
		{in: "https://alice:s3cr3t@charts.example/stable", want: "https://charts.example/stable", had: true},
		{in: "https://alice@charts.example", want: "https://charts.example", had: true},
		{in: "https://:s3cr3t@charts.example/", want: "https://charts.example/", had: true},
		{in: "https://@charts.example/", want: "https://charts.example/", had: true},
		{in: "https://alice:s3@cr3t@charts.example:8443/x", want: "https://charts.example:8443/x", had: true},
		{in: "https://alice:s3cr3t@[::1]:8443", want: "https://[::1]:8443", had: true},
		{in: "https://alice:s3%zzcr3t@charts.example/", want: "https://charts.example/", had: true},
		{in: "oci://alice:s3cr3t@registry.example:5000/charts/web", want: "oci://registry.example:5000/charts/web", had: true},
		{in: "https://charts.example/stable", want: "https://charts.example/stable"},
		{in: "https://charts.example/a@b", want: "https://charts.example/a@b"},
		{in: "https://charts.example?a=b@c", want: "https://charts.example?a=b@c"},
		{in: "https://charts.example#a@b", want: "https://charts.example#a@b"},
		{in: "oci://registry.example/charts/web@sha256:00", want: "oci://registry.example/charts/web@sha256:00"},
		{in: "no slashes@all", want: "no slashes@all"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, had := withoutUserinfo(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.had, had)
			if u, err := url.Parse(tc.in); err == nil && u.Scheme != "" {
				assert.Equal(t, u.User != nil, had, "as net/url reads it")
			}
		})
	}
}

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
