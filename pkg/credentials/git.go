package credentials

import (
	"context"
	"net/url"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
)

// Git reads the credentials of the Git source src at u into a: for https,
// username and password or bearerToken of secretRef (nil: anonymous); for
// ssh, identity and known_hosts, required. It returns their key, with
// tlsKey, the hash of the TLS settings a's HTTP client was built with.
func Git(ctx context.Context, secrets Secrets, namespace string, src *convoyv1alpha1.GitRepositorySource, u *url.URL, a *git.Auth, tlsKey string) (string, error) {
	ref := src.SecretRef
	switch {
	case ref == nil && u.Scheme == "ssh":
		return "", failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs secretRef, with the keys %s and %s", src.URL, identityKey, knownHostsKey)
	case ref == nil:
		return Key(nil, tlsKey), nil
	}
	s, err := readSecret(ctx, secrets, namespace, ref, "secretRef")
	if err != nil {
		return "", err
	}
	where := "secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
	var material []byte
	if u.Scheme == "ssh" {
		user := u.User.Username()
		if user == "" {
			user = "git"
		}
		if len(s.Data[knownHostsKey]) == 0 {
			return "", failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs the key %s (no host key is trusted on first use)", where, knownHostsKey)
		}
		if a.SSH, err = git.NewSSHAuth(s.Data[identityKey], s.Data[knownHostsKey]); err != nil {
			// The error does not quote the key.
			return "", failure.New(ReasonCredentialsInvalid, nil, "%s: %v", where, err)
		}
		a.SSH.User = user
		material = append(append(append([]byte(user), 0), s.Data[identityKey]...), s.Data[knownHostsKey]...)
		return Key(material, tlsKey), nil
	}
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
		return "", failure.New(ReasonCredentialsInvalid, nil, "%s: an https URL needs the keys %s and %s, or %s alone", where, usernameKey, passwordKey, bearerTokenKey)
	}
	return Key(material, tlsKey), nil
}
