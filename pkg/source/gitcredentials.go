package source

import (
	"context"
	"net/url"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// gitCredentials are what a Git fetch presents, and the connection it goes
// through (git.Auth: the sources' HTTP client or SSH dialer, with the Git
// limits). key hashes the credentials and TLS settings ("" is anonymous
// with the system roots).
type gitCredentials struct {
	auth *git.Auth
	key  string
}

// gitCredentials reads the credentials of a Git source as the Release's
// identity (credentials.Git), and certSecretRef for https; an ssh URL
// trusts its known_hosts.
func (f *Fetcher) gitCredentials(ctx context.Context, inputs Inputs, namespace string, src *convoyv1alpha1.GitRepositorySource, u *url.URL) (*gitCredentials, error) {
	a := &git.Auth{Dialer: f.dialer(), Timeout: f.opts.Timeout, Limits: git.Limits{Bytes: int64(f.opts.MaxGitBytes), Refs: f.opts.MaxGitRefs}}
	secrets := releaseSecrets{inputs: inputs, namespace: namespace}
	tlsKey := ""
	if u.Scheme == "ssh" {
		if src.CertSecretRef != nil {
			return nil, failure.New(sourcefailure.ReasonSourceInvalid, nil, "%s: certSecretRef is for https URLs; an ssh URL trusts its known_hosts", src.URL)
		}
	} else {
		tlsCfg, key, err := credentials.TLS(ctx, secrets, namespace, src.CertSecretRef)
		if err != nil {
			return nil, err
		}
		tlsKey = key
		a.HTTPClient = git.HTTPClient(f.clientFor(tlsCfg, tlsKey).Transport, a.Limits)
	}
	key, err := credentials.Git(ctx, secrets, namespace, src, u, a, tlsKey)
	if err != nil {
		return nil, err
	}
	return &gitCredentials{auth: a, key: key}, nil
}
