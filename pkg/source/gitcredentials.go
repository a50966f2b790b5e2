package source

import (
	"context"
	"net/url"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
)

// Keys of the Secret of a Git source's secretRef.
const (
	bearerTokenKey = "bearerToken"
	identityKey    = "identity"
	knownHostsKey  = "known_hosts"
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
// identity: for https, username and password or bearerToken, and
// certSecretRef; for ssh, identity and known_hosts (required).
func (f *Fetcher) gitCredentials(ctx context.Context, inputs Inputs, namespace string, src *convoyv1alpha1.GitRepositorySource, u *url.URL) (*gitCredentials, error) {
	a := &git.Auth{Dialer: f.dialer(), Timeout: f.opts.Timeout, Limits: git.Limits{Bytes: int64(f.opts.MaxGitBytes), Refs: f.opts.MaxGitRefs}}
	var material []byte
	tlsKey := ""
	if u.Scheme == "ssh" {
		if src.CertSecretRef != nil {
			return nil, failure.New(ReasonSourceInvalid, nil, "%s: certSecretRef is for https URLs; an ssh URL trusts its known_hosts", src.URL)
		}
		if src.SecretRef == nil {
			return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs secretRef, with the keys %s and %s", src.URL, identityKey, knownHostsKey)
		}
	} else {
		tlsCfg, key, err := tlsSettings(ctx, inputs, namespace, src.CertSecretRef)
		if err != nil {
			return nil, err
		}
		tlsKey = key
		a.HTTPClient = git.HTTPClient(f.clientFor(tlsCfg, tlsKey).transport, a.Limits)
	}
	if ref := src.SecretRef; ref != nil {
		s, err := readSecret(ctx, inputs, namespace, ref, "secretRef")
		if err != nil {
			return nil, err
		}
		where := "secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
		if u.Scheme == "ssh" {
			user := u.User.Username()
			if user == "" {
				user = "git"
			}
			if len(s.Data[knownHostsKey]) == 0 {
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs the key %s (no host key is trusted on first use)", where, knownHostsKey)
			}
			if a.SSH, err = git.NewSSHAuth(s.Data[identityKey], s.Data[knownHostsKey]); err != nil {
				// The error does not quote the key.
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: %v", where, err)
			}
			a.SSH.User = user
			material = append(append(append([]byte(user), 0), s.Data[identityKey]...), s.Data[knownHostsKey]...)
		} else {
			user, hasUser := s.Data[usernameKey]
			pass, hasPass := s.Data[passwordKey]
			token, hasToken := s.Data[bearerTokenKey]
			switch {
			case hasUser && hasPass && !hasToken:
				a.Username, a.Password = string(user), string(pass)
				material = append(append(append([]byte("basic\x00"), user...), 0), pass...)
			case hasToken && !hasUser && !hasPass:
				a.Token = string(token)
				material = append([]byte("token\x00"), token...)
			default:
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an https URL needs the keys %s and %s, or %s alone", where, usernameKey, passwordKey, bearerTokenKey)
			}
		}
	}
	return &gitCredentials{auth: a, key: credentialKey(material, tlsKey)}, nil
}
