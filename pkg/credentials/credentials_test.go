package credentials

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/git"
)

// errDown is the failure of the Secret "down", which Secrets give as it is.
var errDown = errors.New("the API server is down")

// secrets are Secrets of their names: "down" fails, a missing one is
// NotFound.
type secrets map[string]*corev1.Secret

func (s secrets) Secret(_ context.Context, name, _ string) (*corev1.Secret, error) {
	if name == "down" {
		return nil, errDown
	}
	if secret, ok := s[name]; ok {
		return secret, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func ref(name string) *convoyv1alpha1.LocalObjectReference {
	return &convoyv1alpha1.LocalObjectReference{Name: name}
}

// refused asserts that err is CredentialsInvalid and says says.
func refused(t *testing.T, err error, says string) {
	t.Helper()
	assert.Equal(t, ReasonCredentialsInvalid, failure.ReasonOf(err), "%v", err)
	assert.ErrorContains(t, err, says)
}

// A certSecretRef adds its ca.crt to the system roots and gives its client
// certificate; one that is missing or of no usable key is refused; the
// reader's own failure is returned as it is.
func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	all := secrets{
		"ca":    {Data: map[string][]byte{caKey: ca}},
		"none":  {Data: map[string][]byte{"x": []byte("y")}},
		"notca": {Data: map[string][]byte{caKey: []byte("not PEM")}},
		"half":  {Data: map[string][]byte{certKey: ca}},
		"pair":  {Data: map[string][]byte{certKey: ca, keyKey: []byte("not a key")}},
	}
	cfg, key, err := TLS(context.Background(), all, "shop", nil)
	require.NoError(t, err)
	assert.Nil(t, cfg)
	assert.Empty(t, key, "the system roots, no client certificate")

	cfg, key, err = TLS(context.Background(), all, "shop", ref("ca"))
	require.NoError(t, err)
	require.NotNil(t, cfg)
	assert.NotEmpty(t, key)
	for name, says := range map[string]string{
		"absent": "certSecretRef Secret shop/absent not found",
		"none":   "has none of the keys ca.crt, tls.crt and tls.key",
		"notca":  "key ca.crt holds no PEM certificate",
		"half":   "tls.crt and tls.key go together",
		"pair":   "keys tls.crt and tls.key are not a certificate and its key",
	} {
		_, _, err := TLS(context.Background(), all, "shop", ref(name))
		refused(t, err, says)
	}
	_, _, err = TLS(context.Background(), all, "shop", ref("down"))
	assert.ErrorIs(t, err, errDown)
}

// A registry's credentials are the entry of a dockerconfigjson Secret for
// its host; a repository's username and password; each with their key,
// "" for anonymous.
func TestRegistryAndRepository(t *testing.T) {
	ctx := context.Background()
	repo, err := name.NewRepository("registry.example/charts/web")
	require.NoError(t, err)
	docker := func(host string) *corev1.Secret {
		return &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"` + host + `":{"username":"u","password":"p"}}}`)}}
	}
	all := secrets{
		"docker": docker("registry.example"), "elsewhere": docker("other.example"),
		"opaque": {Type: corev1.SecretTypeOpaque},
		"basic":  {Data: map[string][]byte{usernameKey: []byte("u"), passwordKey: []byte("p")}},
		"user":   {Data: map[string][]byte{usernameKey: []byte("u")}},
	}
	oci := func(secret string) *convoyv1alpha1.OCIRepositorySource {
		src := &convoyv1alpha1.OCIRepositorySource{URL: "oci://registry.example/charts/web"}
		if secret != "" {
			src.SecretRef = ref(secret)
		}
		return src
	}
	c, err := Registry(ctx, all, "shop", oci(""), repo)
	require.NoError(t, err)
	assert.Equal(t, authn.Anonymous, c.Auth)
	assert.Empty(t, c.Key)
	c, err = Registry(ctx, all, "shop", oci("docker"), repo)
	require.NoError(t, err)
	got, err := c.Auth.Authorization()
	require.NoError(t, err)
	assert.Equal(t, "u", got.Username)
	assert.NotEmpty(t, c.Key)
	c, err = Registry(ctx, all, "shop", oci("elsewhere"), repo)
	require.NoError(t, err)
	assert.Equal(t, authn.Anonymous, c.Auth, "no entry for the registry")
	_, err = Registry(ctx, all, "shop", oci("opaque"), repo)
	refused(t, err, "secretRef Secret shop/opaque is of type")
	_, err = Registry(ctx, all, "shop", oci("absent"), repo)
	refused(t, err, "secretRef Secret shop/absent not found")

	helm := func(secret string) *convoyv1alpha1.HelmRepositorySource {
		return &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example", SecretRef: ref(secret)}
	}
	c, err = Repository(ctx, all, "shop", helm("basic"))
	require.NoError(t, err)
	assert.Equal(t, [2]string{"u", "p"}, [2]string{c.Username, c.Password})
	assert.NotEmpty(t, c.Key)
	_, err = Repository(ctx, all, "shop", helm("user"))
	refused(t, err, "has not both keys username and password")
}

// A Git server's credentials: over https a username and password or a
// bearer token, alone; over ssh an identity and known_hosts, required.
func TestGit(t *testing.T) {
	all := secrets{
		"token":    {Data: map[string][]byte{bearerTokenKey: []byte("t")}},
		"both":     {Data: map[string][]byte{bearerTokenKey: []byte("t"), usernameKey: []byte("u"), passwordKey: []byte("p")}},
		"identity": {Data: map[string][]byte{identityKey: []byte("not a key")}},
	}
	for _, tc := range []struct {
		name, url, secret, says string
		token                   string
	}{
		{name: "anonymous https", url: "https://git.example/r.git"},
		{name: "a token", url: "https://git.example/r.git", secret: "token", token: "t"},
		{name: "a token and a password", url: "https://git.example/r.git", secret: "both", says: "an https URL needs the keys username and password, or bearerToken alone"},
		{name: "ssh without a Secret", url: "ssh://git@git.example/r.git", says: "an ssh URL needs secretRef, with the keys identity and known_hosts"},
		{name: "ssh without known_hosts", url: "ssh://git@git.example/r.git", secret: "identity", says: "an ssh URL needs the key known_hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			require.NoError(t, err)
			src := &convoyv1alpha1.GitRepositorySource{URL: tc.url}
			if tc.secret != "" {
				src.SecretRef = ref(tc.secret)
			}
			a := &git.Auth{}
			key, err := Git(context.Background(), all, "shop", src, u, a, "")
			if tc.says != "" {
				refused(t, err, tc.says)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.token, a.Token)
			assert.Equal(t, tc.secret == "", key == "", "a key for credentials, none for anonymous")
		})
	}
}

// Key is "" for no credentials with the system roots, and tells material
// and TLS settings apart.
func TestKey(t *testing.T) {
	assert.Empty(t, Key(nil, ""))
	keys := map[string]bool{}
	for _, k := range []string{Key([]byte("a"), ""), Key([]byte("b"), ""), Key(nil, "tls"), Key([]byte("a"), "tls")} {
		assert.NotEmpty(t, k)
		keys[k] = true
	}
	assert.Len(t, keys, 4)
}
