// Package credentials reads the credentials of a Release's source from the
// Secrets its spec names, as the Release: a registry's docker config entry,
// a Helm repository's username and password, a Git server's (username and
// password or a bearer token over https; an SSH identity and known_hosts),
// the TLS settings of certSecretRef; and the key that tells them apart in
// the caches of pkg/source, which reads the Secrets for it (Secrets).
package credentials

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/oci"
)

// ReasonCredentialsInvalid is a Secret of credentials that is missing, or
// not of the type or the keys expected.
var ReasonCredentialsInvalid = failure.Declare(failure.Reason{
	Name: "CredentialsInvalid", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync, failure.Response}, Refusal: true,
	Means:  "the Secret of secretRef or certSecretRef is missing, or not of the expected type or keys",
	Action: "create the Secret with the type and keys the sources docs give",
})

// Secrets reads the Secrets of the Release's namespace, as the Release: a
// missing one is the API's NotFound error, as it is; any other failure
// carries the reader's reason. what names the Secret in its messages.
type Secrets interface {
	Secret(ctx context.Context, name, what string) (*corev1.Secret, error)
}

// Keys of the Secrets of secretRef (Helm repository, Git) and certSecretRef.
const (
	usernameKey    = "username"
	passwordKey    = "password"
	caKey          = "ca.crt"
	certKey        = "tls.crt"
	keyKey         = "tls.key"
	bearerTokenKey = "bearerToken"
	identityKey    = "identity"
	knownHostsKey  = "known_hosts"
)

// Credentials are what a fetch presents: an authenticator for a registry,
// or a user and password for a repository, and the TLS settings (TLSKey
// hashes them). Key hashes all of it: the caches tell identities apart by
// it ("" is anonymous with the system roots).
type Credentials struct {
	Auth               authn.Authenticator
	Username, Password string
	TLS                *tls.Config
	TLSKey             string
	Key                string
}

// readSecret reads the Secret ref of namespace with secrets, for what
// (secretRef, certSecretRef).
func readSecret(ctx context.Context, secrets Secrets, namespace string, ref *convoyv1alpha1.LocalObjectReference, what string) (*corev1.Secret, error) {
	where := fmt.Sprintf("%s %s", what, convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe())
	s, err := secrets.Secret(ctx, ref.Name, where)
	switch {
	case apierrors.IsNotFound(err):
		return nil, failure.Quiet(ReasonCredentialsInvalid, err, "%s not found", where)
	case err != nil:
		return nil, err
	}
	return s, nil
}

// TLS reads certSecretRef (nil: the system roots, no client certificate):
// ca.crt is added to the system roots; tls.crt and tls.key, when both are
// there, are the client certificate. It returns the settings and their
// hash.
func TLS(ctx context.Context, secrets Secrets, namespace string, ref *convoyv1alpha1.LocalObjectReference) (*tls.Config, string, error) {
	if ref == nil {
		return nil, "", nil
	}
	s, err := readSecret(ctx, secrets, namespace, ref, "certSecretRef")
	if err != nil {
		return nil, "", err
	}
	where := "certSecretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	h := sha256.New()
	if ca, ok := s.Data[caKey]; ok {
		if !roots.AppendCertsFromPEM(ca) {
			return nil, "", failure.New(ReasonCredentialsInvalid, nil, "%s: key %s holds no PEM certificate", where, caKey)
		}
		h.Write(ca)
	}
	crt, hasCrt := s.Data[certKey]
	key, hasKey := s.Data[keyKey]
	switch {
	case hasCrt && hasKey:
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			// The error may quote the key: not in the message.
			return nil, "", failure.New(ReasonCredentialsInvalid, nil, "%s: keys %s and %s are not a certificate and its key", where, certKey, keyKey)
		}
		cfg.Certificates = []tls.Certificate{pair}
		h.Write([]byte{0})
		h.Write(crt)
		h.Write(key)
	case hasCrt || hasKey:
		return nil, "", failure.New(ReasonCredentialsInvalid, nil, "%s: %s and %s go together", where, certKey, keyKey)
	case !hasCrt && s.Data[caKey] == nil:
		return nil, "", failure.New(ReasonCredentialsInvalid, nil, "%s has none of the keys %s, %s and %s", where, caKey, certKey, keyKey)
	}
	return cfg, hex.EncodeToString(h.Sum(nil)), nil
}

// Registry reads the credentials of an OCI source: the entry of the
// kubernetes.io/dockerconfigjson Secret of secretRef for the registry of
// repo (nil ref: anonymous), and certSecretRef.
func Registry(ctx context.Context, secrets Secrets, namespace string, src *convoyv1alpha1.OCIRepositorySource, repo name.Repository) (*Credentials, error) {
	c := &Credentials{Auth: authn.Anonymous}
	var err error
	if c.TLS, c.TLSKey, err = TLS(ctx, secrets, namespace, src.CertSecretRef); err != nil {
		return nil, err
	}
	var material []byte
	if ref := src.SecretRef; ref != nil {
		s, err := readSecret(ctx, secrets, namespace, ref, "secretRef")
		if err != nil {
			return nil, err
		}
		where := "secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
		if s.Type != corev1.SecretTypeDockerConfigJson {
			return nil, failure.New(ReasonCredentialsInvalid, nil, "%s is of type %q, not %s", where, s.Type, corev1.SecretTypeDockerConfigJson)
		}
		entry, err := oci.DockerConfigEntry(s.Data[corev1.DockerConfigJsonKey], repo)
		if err != nil {
			return nil, failure.New(ReasonCredentialsInvalid, err, "%s", where)
		}
		if entry != nil {
			var cfg authn.AuthConfig
			if err := json.Unmarshal(entry, &cfg); err != nil {
				// The error may quote the entry: not in the message.
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: the entry for %s is not a docker credential", where, repo.RegistryStr())
			}
			c.Auth, material = authn.FromConfig(cfg), entry
		}
	}
	c.Key = Key(material, c.TLSKey)
	return c, nil
}

// Repository reads the credentials of a Helm repository: the keys username
// and password of the Secret of secretRef (nil: anonymous), and
// certSecretRef.
func Repository(ctx context.Context, secrets Secrets, namespace string, src *convoyv1alpha1.HelmRepositorySource) (*Credentials, error) {
	c := &Credentials{}
	var err error
	if c.TLS, c.TLSKey, err = TLS(ctx, secrets, namespace, src.CertSecretRef); err != nil {
		return nil, err
	}
	var material []byte
	if ref := src.SecretRef; ref != nil {
		s, err := readSecret(ctx, secrets, namespace, ref, "secretRef")
		if err != nil {
			return nil, err
		}
		user, hasUser := s.Data[usernameKey]
		pass, hasPass := s.Data[passwordKey]
		if !hasUser || !hasPass {
			return nil, failure.New(ReasonCredentialsInvalid, nil, "secretRef %s has not both keys %s and %s",
				convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe(), usernameKey, passwordKey)
		}
		c.Username, c.Password = string(user), string(pass)
		material = append(append(append([]byte{}, user...), 0), pass...)
	}
	c.Key = Key(material, c.TLSKey)
	return c, nil
}

// Key hashes the material of credentials and the hash of TLS settings; ""
// for none.
func Key(material []byte, tlsKey string) string {
	if len(material) == 0 && tlsKey == "" {
		return ""
	}
	sum := sha256.Sum256(append(append(material, 0), tlsKey...))
	return hex.EncodeToString(sum[:16])
}
