package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyfake "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/fake"

	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

const ns = "team-a"

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

type fixture struct {
	provider *Provider
	convoy   *convoyfake.Clientset
	kube     *kubefake.Clientset
	// identities are those whose clients were built, in order.
	identities []Identity
}

func newFixture(t *testing.T, o Options, objs ...runtime.Object) *fixture {
	t.Helper()
	var convoyObjs, kubeObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*convoyv1alpha1.Cluster); ok {
			convoyObjs = append(convoyObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{convoy: convoyfake.NewClientset(convoyObjs...), kube: kubefake.NewClientset(kubeObjs...)}
	var err error
	f.provider, err = NewProvider(&rest.Config{Host: "https://local.example:6443", QPS: 5, Burst: 10}, f.convoy.ConvoyV1alpha1(), o)
	require.NoError(t, err)
	// The identities read Secrets from the fake clientset; the rest of
	// their clients are the real, impersonating ones.
	f.provider.home = func(id Identity) (*homeClients, error) {
		h, err := f.provider.impersonate(id)
		if err == nil {
			f.identities = append(f.identities, id)
			h.kube = f.kube
		}
		return h, err
	}
	return f
}

// target returns the target cluster of release, failing the test on error.
func (f *fixture) target(t *testing.T, r *convoyv1alpha1.Release) *Target {
	t.Helper()
	access, err := f.provider.ForRelease(context.Background(), r)
	require.NoError(t, err)
	return access.Target
}

// kubeconfig is a self-contained kubeconfig for server.
func kubeconfig(t *testing.T, server string, edit ...func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["target"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	cfg.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "admin"}
	cfg.CurrentContext = "target"
	for _, e := range edit {
		e(cfg)
	}
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

func clusterObj(name, secret, key string) *convoyv1alpha1.Cluster {
	return &convoyv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: convoyv1alpha1.ClusterSpec{KubeConfig: convoyv1alpha1.KubeConfigReference{
			SecretRef: convoyv1alpha1.SecretKeyReference{Name: secret, Key: key},
		}},
	}
}

func secretObj(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func release(cluster string) *convoyv1alpha1.Release {
	r := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	if cluster != "" {
		r.Spec.Cluster = &convoyv1alpha1.ClusterReference{Name: cluster}
	}
	return r
}

func clusterError(t *testing.T, err error, reason string) *failure.Error {
	t.Helper()
	require.Error(t, err)
	var ce *failure.Error
	require.True(t, errors.As(err, &ce), "not a *failure.Error: %T %v", err, err)
	assert.Equal(t, reason, ce.Reason, "reason of %v", err)
	assert.Equal(t, ce.Message, err.Error())
	return ce
}

func TestLocalAccess(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	access, err := f.provider.ForRelease(ctx, release(""))
	require.NoError(t, err)
	assert.Equal(t, Identity{Namespace: ns, Name: "default"}, access.Identity, "no serviceAccountName: the default ServiceAccount")
	assert.Equal(t, "ServiceAccount team-a/default", access.Who())
	target := access.Target
	assert.Equal(t, "", target.Name)
	assert.Equal(t, "https://local.example:6443", target.Config.Host)
	assert.Equal(t, "system:serviceaccount:team-a:default", target.Config.Impersonate.UserName)
	assert.NotNil(t, target.Dynamic)
	assert.NotNil(t, target.HTTPClient)
	assert.NotNil(t, access.Home)
	assert.Same(t, f.provider.local.Mapper, target.Mapper, "identities share the local discovery")
	assert.Empty(t, f.convoy.Actions(), "no Cluster read for the local cluster")
	assert.Empty(t, f.kube.Actions(), "no Secret read for the local cluster")

	same := release("")
	same.Name = "other"
	again, err := f.provider.ForRelease(ctx, same)
	require.NoError(t, err)
	assert.Same(t, target, again.Target, "one identity, one set of clients")

	named := release("")
	named.Spec.ServiceAccountName = "deployer"
	deployer, err := f.provider.ForRelease(ctx, named)
	require.NoError(t, err)
	assert.Equal(t, Identity{Namespace: ns, Name: "deployer"}, deployer.Identity)
	assert.NotSame(t, target, deployer.Target)
	assert.Same(t, target.Mapper, deployer.Target.Mapper)
	assert.Equal(t, "system:serviceaccount:team-a:deployer", deployer.Target.Config.Impersonate.UserName)
	assert.Equal(t, []Identity{{ns, "default"}, {ns, "deployer"}}, f.identities, "clients built once per identity")

	emptyName := release("")
	emptyName.Spec.Cluster = &convoyv1alpha1.ClusterReference{}
	local, err := f.provider.ForRelease(ctx, emptyName)
	require.NoError(t, err)
	assert.Same(t, target, local.Target, "an empty cluster name is the local cluster")
}

func TestDefaultServiceAccountOption(t *testing.T) {
	f := newFixture(t, Options{DefaultServiceAccount: "convoy"})
	access, err := f.provider.ForRelease(context.Background(), release(""))
	require.NoError(t, err)
	assert.Equal(t, Identity{Namespace: ns, Name: "convoy"}, access.Identity)
}

// Every identity impersonates its ServiceAccount over convoy-apiserver's own
// connection to the local cluster: the API server sees the server's token
// and the Impersonate-User header, on one shared connection.
func TestIdentitiesImpersonateOverOneConnection(t *testing.T) {
	type seen struct{ auth, user, remote string }
	var mu sync.Mutex
	var requests []seen
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, seen{r.Header.Get("Authorization"), r.Header.Get("Impersonate-User"), r.RemoteAddr})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"team-a"}}`))
	}))
	t.Cleanup(srv.Close)
	p, err := NewProvider(&rest.Config{Host: srv.URL, BearerToken: "server-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		convoyfake.NewClientset().ConvoyV1alpha1(), Options{})
	require.NoError(t, err)

	ctx := context.Background()
	for _, sa := range []string{"", "deployer", ""} {
		r := release("")
		r.Spec.ServiceAccountName = sa
		access, err := p.ForRelease(ctx, r)
		require.NoError(t, err)
		_, err = access.Home.CoreV1().ConfigMaps(ns).Get(ctx, "x", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = access.Target.Dynamic.Resource(configMaps).Namespace(ns).Get(ctx, "x", metav1.GetOptions{})
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, requests, 6)
	users := []string{"default", "default", "deployer", "deployer", "default", "default"}
	for i, r := range requests {
		assert.Equal(t, "Bearer server-token", r.auth, "request %d", i)
		assert.Equal(t, "system:serviceaccount:team-a:"+users[i], r.user, "request %d", i)
		assert.Equal(t, requests[0].remote, r.remote, "request %d: one connection for every identity", i)
	}
}

func TestClusterSecretForbidden(t *testing.T) {
	f := newFixture(t, Options{}, clusterObj("prod", "prod-kubeconfig", ""))
	f.kube.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "prod-kubeconfig",
			errors.New(`User "system:serviceaccount:team-a:default" cannot get resource "secrets"`))
	})
	_, err := f.provider.ForRelease(context.Background(), release("prod"))
	ce := clusterError(t, err, failure.ReasonForbidden)
	assert.Contains(t, ce.Message, "ServiceAccount team-a/default may not get Secret team-a/prod-kubeconfig, the kubeconfig of Cluster.convoy.kumodo.io team-a/prod")
	assert.True(t, apierrors.IsForbidden(err))
}

func TestClusterNotFound(t *testing.T) {
	f := newFixture(t, Options{}, clusterObj("prod", "prod-kubeconfig", ""))

	_, err := f.provider.ForRelease(context.Background(), release("missing"))
	ce := clusterError(t, err, ReasonClusterNotFound)
	assert.Contains(t, ce.Message, "Cluster.convoy.kumodo.io team-a/missing")
	assert.True(t, apierrors.IsNotFound(err), "the API error is wrapped: %v", err)

	_, err = f.provider.ForRelease(context.Background(), release("prod"))
	ce = clusterError(t, err, ReasonClusterNotFound)
	assert.Contains(t, ce.Message, "Secret team-a/prod-kubeconfig")
	assert.Contains(t, ce.Message, "Cluster.convoy.kumodo.io team-a/prod")
	assert.True(t, apierrors.IsNotFound(err), "the API error is wrapped: %v", err)
}

// A Cluster that cannot be read for another reason than NotFound or
// Forbidden (a server error) is ClusterNotFound too, its cause in the
// message: every error of ForRelease has a reason.
func TestClusterUnreadable(t *testing.T) {
	f := newFixture(t, Options{}, clusterObj("prod", "prod-kubeconfig", ""))
	f.convoy.PrependReactor("get", "clusters", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	_, err := f.provider.ForRelease(context.Background(), release("prod"))
	ce := clusterError(t, err, ReasonClusterNotFound)
	assert.Contains(t, ce.Message, "etcd is down")
}

func TestClusterConfigInvalid(t *testing.T) {
	good := kubeconfig(t, "https://127.0.0.1:6443")
	for name, tc := range map[string]struct {
		key     string
		data    map[string][]byte
		message string
	}{
		"missing default key": {data: map[string][]byte{"config": good}, message: `has no key "value"`},
		"missing custom key":  {key: "kubeconfig", data: map[string][]byte{"value": good}, message: `has no key "kubeconfig"`},
		"empty value":         {data: map[string][]byte{"value": {}}, message: `has no key "value"`},
		"garbage":             {data: map[string][]byte{"value": []byte("\x00\x01 this is { not a kubeconfig")}, message: "not a usable kubeconfig"},
		"yaml but no kubeconfig": {
			data: map[string][]byte{"value": []byte("hello: world\n")}, message: "not a usable kubeconfig",
		},
		"no server": {
			data:    map[string][]byte{"value": kubeconfig(t, "")},
			message: "not a usable kubeconfig",
		},
		"bad CA data": {
			data: map[string][]byte{"value": kubeconfig(t, "https://127.0.0.1:6443", func(c *clientcmdapi.Config) {
				c.Clusters["target"].InsecureSkipTLSVerify = false
				c.Clusters["target"].CertificateAuthorityData = []byte("not PEM")
			})},
			message: "not a usable kubeconfig",
		},
		"exec plugin": {
			data: map[string][]byte{"value": kubeconfig(t, "https://127.0.0.1:6443", func(c *clientcmdapi.Config) {
				c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
			})},
			message: "exec",
		},
		"token file": {
			data: map[string][]byte{"value": kubeconfig(t, "https://127.0.0.1:6443", func(c *clientcmdapi.Config) {
				c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
			})},
			message: "tokenFile",
		},
		"CA file": {
			data: map[string][]byte{"value": kubeconfig(t, "https://127.0.0.1:6443", func(c *clientcmdapi.Config) {
				c.Clusters["target"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthority: "/etc/ssl/ca.crt"}
			})},
			message: "certificate-authority",
		},
		"plain http to a private address": {
			data:    map[string][]byte{"value": kubeconfig(t, "http://10.1.2.3:8080")},
			message: `server "http://10.1.2.3:8080" is plain http: a Cluster's API server is reached over https`,
		},
		"plain http to a name": {
			data:    map[string][]byte{"value": kubeconfig(t, "http://kubernetes.example:8080")},
			message: "is plain http",
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Options{}, clusterObj("prod", "prod-kubeconfig", tc.key), secretObj("prod-kubeconfig", tc.data))
			before := refusalCount(t, ReasonClusterConfigInvalid)
			_, err := f.provider.ForRelease(context.Background(), release("prod"))
			ce := clusterError(t, err, ReasonClusterConfigInvalid)
			// A kubeconfig refused is counted; a Secret without the key is
			// a Cluster not set up yet, not a refusal.
			wantCounted := 1.0
			if strings.HasPrefix(tc.message, "has no key") {
				wantCounted = 0
			}
			assert.Equal(t, before+wantCounted, refusalCount(t, ReasonClusterConfigInvalid))
			assert.Contains(t, ce.Message, "Secret team-a/prod-kubeconfig")
			assert.Contains(t, ce.Message, "Cluster.convoy.kumodo.io team-a/prod")
			assert.Contains(t, ce.Message, tc.message)
		})
	}
}

func TestClusterTarget(t *testing.T) {
	for name, key := range map[string]string{"default key": "", "custom key": "kubeconfig"} {
		t.Run(name, func(t *testing.T) {
			dataKey := key
			if dataKey == "" {
				dataKey = "value"
			}
			f := newFixture(t, Options{},
				clusterObj("prod", "prod-kubeconfig", key),
				secretObj("prod-kubeconfig", map[string][]byte{dataKey: kubeconfig(t, "https://prod.example:6443")}))
			target := f.target(t, release("prod"))
			assert.Equal(t, "team-a/prod", target.Name)
			assert.Equal(t, "https://prod.example:6443", target.Config.Host)
			assert.Equal(t, "secret-token", target.Config.BearerToken)
			assert.NotNil(t, target.Dynamic)
			assert.NotNil(t, target.Mapper)
			assert.NotSame(t, f.provider.local, target)
			assert.Empty(t, target.Config.Impersonate.UserName, "the kubeconfig's credentials are the identity on a Cluster")
		})
	}
}

func TestTargetCachedUntilTheKubeconfigChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{},
		clusterObj("prod", "prod-kubeconfig", ""),
		secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://prod.example:6443")}))

	first := f.target(t, release("prod"))
	f.convoy.ClearActions()
	f.kube.ClearActions()
	again := f.target(t, release("prod"))
	assert.Same(t, first, again, "nothing changed")
	assert.Len(t, f.convoy.Actions(), 1, "one read of the Cluster per call")
	assert.Len(t, f.kube.Actions(), 1, "one read of the Secret per call")

	// A change of the Secret that leaves the kubeconfig alone.
	secrets := f.kube.CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, "prod-kubeconfig", metav1.GetOptions{})
	require.NoError(t, err)
	s.Labels = map[string]string{"team": "a"}
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	again = f.target(t, release("prod"))
	assert.Same(t, first, again, "a label on the Secret does not change the clients")

	// A new kubeconfig.
	s.Data["value"] = kubeconfig(t, "https://prod-2.example:6443")
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	second := f.target(t, release("prod"))
	assert.NotSame(t, first, second, "the Secret changed")
	assert.NotSame(t, first.Mapper, second.Mapper)
	assert.Equal(t, "https://prod-2.example:6443", second.Config.Host)
	again = f.target(t, release("prod"))
	assert.Same(t, second, again)

	// The Cluster points at another Secret.
	_, err = secrets.Create(ctx, secretObj("other", map[string][]byte{"config": kubeconfig(t, "https://prod-3.example:6443")}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = f.convoy.ConvoyV1alpha1().Clusters(ns).Update(ctx, clusterObj("prod", "other", "config"), metav1.UpdateOptions{})
	require.NoError(t, err)
	third := f.target(t, release("prod"))
	assert.NotSame(t, second, third)
	assert.Equal(t, "https://prod-3.example:6443", third.Config.Host)

	// Gone, then back: not the stale Target.
	require.NoError(t, secrets.Delete(ctx, "other", metav1.DeleteOptions{}))
	_, err = f.provider.ForRelease(ctx, release("prod"))
	clusterError(t, err, ReasonClusterNotFound)
	_, err = secrets.Create(ctx, secretObj("other", map[string][]byte{"config": kubeconfig(t, "https://prod-3.example:6443")}), metav1.CreateOptions{})
	require.NoError(t, err)
	fourth := f.target(t, release("prod"))
	assert.NotSame(t, third, fourth)
}

func TestTargetCacheConcurrent(t *testing.T) {
	f := newFixture(t, Options{},
		clusterObj("prod", "prod-kubeconfig", ""),
		secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://prod.example:6443")}),
		clusterObj("staging", "staging-kubeconfig", ""),
		secretObj("staging-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://staging.example:6443")}))
	const n = 16
	got := make([]*Target, 2*n)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			name := "prod"
			if i%2 == 1 {
				name = "staging"
			}
			access, err := f.provider.ForRelease(context.Background(), release(name))
			if assert.NoError(t, err) {
				got[i] = access.Target
			}
		})
	}
	wg.Wait()
	for i := range got {
		assert.Same(t, got[i%2], got[i], "target %d", i)
	}
	assert.NotSame(t, got[0], got[1])
}

func TestOptionsApplied(t *testing.T) {
	objs := []runtime.Object{
		clusterObj("prod", "prod-kubeconfig", ""),
		secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://prod.example:6443")}),
	}
	for name, tc := range map[string]struct {
		opts    Options
		qps     float32
		burst   int
		timeout time.Duration
	}{
		"defaults": {qps: 1000, burst: 2000, timeout: 10 * time.Second},
		"set":      {opts: Options{QPS: 200, Burst: 400, Timeout: 3 * time.Second}, qps: 200, burst: 400, timeout: 3 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.opts, objs...)
			remote := f.target(t, release("prod"))
			local := f.target(t, release(""))
			for _, target := range []*Target{f.provider.local, local, remote} {
				cfg := target.Config
				assert.Equal(t, tc.qps, cfg.QPS, "QPS of %q", target.Name)
				assert.Equal(t, tc.burst, cfg.Burst, "Burst of %q", target.Name)
				assert.Equal(t, tc.timeout, cfg.Timeout, "Timeout of %q", target.Name)
				assert.Equal(t, tc.timeout, target.HTTPClient.Timeout, "HTTP client timeout of %q", target.Name)
				assert.Equal(t, "convoy-apiserver", cfg.UserAgent)
				assert.NotNil(t, cfg.Dial, "dial timeout of %q", target.Name)
				if target == local {
					assert.Same(t, f.provider.local.Config.Transport, cfg.Transport, "identities share the local transport")
					continue
				}
				tr, ok := cfg.Transport.(*http.Transport)
				require.True(t, ok, "transport of %q is %T", target.Name, cfg.Transport)
				assert.Equal(t, tc.timeout, tr.TLSHandshakeTimeout, "TLS handshake timeout of %q", target.Name)
				assert.NotNil(t, tr.DialContext)
				// Further clients from the config work and share the transport.
				hc, err := rest.HTTPClientFor(cfg)
				require.NoError(t, err, "client from the config of %q", target.Name)
				assert.Equal(t, tc.timeout, hc.Timeout)
			}
		})
	}
}

func TestUnreachableClusterFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())

	// A server that accepts connections and never answers: the TLS
	// handshake stalls.
	stalled, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := stalled.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stalled.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})

	f := newFixture(t, Options{Timeout: 500 * time.Millisecond, AllowLoopback: true},
		clusterObj("closed", "closed-kubeconfig", ""),
		secretObj("closed-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://"+closed)}),
		clusterObj("stalled", "stalled-kubeconfig", ""),
		secretObj("stalled-kubeconfig", map[string][]byte{"value": kubeconfig(t, "https://"+stalled.Addr().String())}))

	// The test's own deadline only keeps a broken client from hanging the
	// test; the request must fail for its own reasons well before it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("closed port", func(t *testing.T) {
		target := f.target(t, release("closed"))
		_, err := target.Dynamic.Resource(configMaps).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
		require.Error(t, err)
		assert.True(t, utilnet.IsConnectionRefused(err), "want a connection refused error, got %v", err)
		require.NoError(t, ctx.Err())
	})

	t.Run("stalled TLS handshake", func(t *testing.T) {
		target := f.target(t, release("stalled"))
		_, err := target.Dynamic.Resource(configMaps).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the request only ended with the test's deadline")
		var netErr net.Error
		timedOut := errors.As(err, &netErr) && netErr.Timeout()
		assert.True(t, timedOut, "want a timeout, got %v", err)

		// Without the request timeout, the handshake timeout alone ends it,
		// long before client-go's own 10s.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cfg := rest.CopyConfig(target.Config)
		cfg.Timeout = 0
		hc, err := rest.HTTPClientFor(cfg)
		require.NoError(t, err)
		dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
		require.NoError(t, err)
		_, err = dyn.Resource(configMaps).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the handshake timeout is not Options.Timeout")
		assert.ErrorContains(t, err, "TLS handshake timeout")
	})

	t.Run("discovery through the Mapper", func(t *testing.T) {
		target := f.target(t, release("closed"))
		_, err := target.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1")
		require.Error(t, err)
		require.NoError(t, ctx.Err())
	})
}

func TestTargetTalksTLS(t *testing.T) {
	var gotAuth, gotAgent string
	var requests atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		gotAuth, gotAgent = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
		if r.URL.Path != "/api/v1/namespaces/default/configmaps/x" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":{"k":"v"}}`))
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	objs := []runtime.Object{
		clusterObj("prod", "prod-kubeconfig", ""),
		secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, srv.URL, func(c *clientcmdapi.Config) {
			c.Clusters["target"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: caPEM}
		})}),
	}

	// Without AllowLoopback, the dialer refuses the loopback address before
	// connecting: the server sees nothing. The refusal is counted.
	refusedBefore := refusalCount(t, egress.ReasonAddressNotAllowed)
	_, err := newFixture(t, Options{}, objs...).target(t, release("prod")).Dynamic.Resource(configMaps).Namespace("default").Get(context.Background(), "x", metav1.GetOptions{})
	var notAllowed *egress.AddressNotAllowedError
	require.ErrorAs(t, err, &notAllowed)
	assert.Equal(t, egress.WhyLoopback, notAllowed.Why)
	assert.Equal(t, egress.ReasonAddressNotAllowed, failure.ReasonOf(err))
	assert.Contains(t, err.Error(), "(convoy-apiserver --allow-loopback-clusters allows it for local development)")
	assert.NotContains(t, err.Error(), "-sources")
	assert.Zero(t, requests.Load(), "no request reached the loopback listener")
	assert.Equal(t, refusedBefore+1, refusalCount(t, egress.ReasonAddressNotAllowed))

	f := newFixture(t, Options{AllowLoopback: true}, objs...)
	target := f.target(t, release("prod"))
	cm, err := target.Dynamic.Resource(configMaps).Namespace("default").Get(context.Background(), "x", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "x", cm.GetName())
	assert.Equal(t, "Bearer secret-token", gotAuth)
	assert.Equal(t, "convoy-apiserver", gotAgent)

	// A server whose certificate the CA did not sign is refused.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	require.NoError(t, err)
	otherCert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	other := httptest.NewUnstartedServer(http.NotFoundHandler())
	other.TLS = &tls.Config{Certificates: []tls.Certificate{otherCert}}
	other.StartTLS()
	t.Cleanup(other.Close)
	_, err = f.kube.CoreV1().Secrets(ns).Update(context.Background(), secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, other.URL, func(c *clientcmdapi.Config) {
		c.Clusters["target"] = &clientcmdapi.Cluster{Server: other.URL, CertificateAuthorityData: caPEM}
	})}), metav1.UpdateOptions{})
	require.NoError(t, err)
	target = f.target(t, release("prod"))
	_, err = target.Dynamic.Resource(configMaps).Namespace("default").Get(context.Background(), "x", metav1.GetOptions{})
	var unknownAuthority x509.UnknownAuthorityError
	assert.True(t, errors.As(err, &unknownAuthority), "want an unknown authority error, got %v", err)
}

// A Cluster keeps to an address policy of its own: private addresses are
// refused unless AllowPrivate (--allow-private-clusters), and the refusal
// names that flag; plain http only to loopback. The dialer asks the policy,
// then the test's Control refuses whatever is off loopback, so that a
// policy that let an address through fails the test without a packet sent
// there.
func TestClusterAddressPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		server  string
		opts    Options
		allowed bool   // the policy lets the dial through (to the test's refusal)
		why     string // else the policy's refusal
		message string
	}{
		{name: "private, refused by default", server: "https://10.1.2.3:6443", why: egress.WhyPrivate,
			message: "(convoy-apiserver --allow-private-clusters allows private addresses)"},
		{name: "shared address space", server: "https://100.64.0.7:6443", why: egress.WhyPrivate},
		{name: "unique local IPv6", server: "https://[fd00::7]:6443", why: egress.WhyPrivate},
		{name: "private, allowed", server: "https://10.1.2.3:6443", opts: Options{AllowPrivate: true}, allowed: true},
		{name: "public", server: "https://203.0.113.7:6443", allowed: true},
		{name: "link-local, whatever the flags", server: "https://169.254.169.254:443", opts: Options{AllowPrivate: true, AllowLoopback: true}, why: egress.WhyLinkLocal},
		{name: "plain http to loopback, allowed", server: "http://127.0.0.1:1", opts: Options{AllowLoopback: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts, clusterObj("prod", "prod-kubeconfig", ""),
				secretObj("prod-kubeconfig", map[string][]byte{"value": kubeconfig(t, tc.server)}))
			var allowed []string
			var mu sync.Mutex
			f.provider.dialControl = func(policy *egress.AddressPolicy) func(network, address string, c syscall.RawConn) error {
				return func(network, address string, c syscall.RawConn) error {
					if err := policy.Control(network, address, c); err != nil {
						return err
					}
					if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr().Unmap().IsLoopback() {
						return nil
					}
					mu.Lock()
					allowed = append(allowed, address)
					mu.Unlock()
					return fmt.Errorf("test: %s is off loopback", address)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := f.target(t, release("prod")).Dynamic.Resource(configMaps).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
			require.Error(t, err)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tc.allowed:
				assert.NotEmpty(t, allowed, "the policy let the dial through: %v", err)
				assert.ErrorContains(t, err, "is off loopback")
			case tc.why != "":
				assert.Empty(t, allowed)
				var notAllowed *egress.AddressNotAllowedError
				require.ErrorAs(t, err, &notAllowed)
				assert.Equal(t, tc.why, notAllowed.Why)
				assert.Contains(t, err.Error(), tc.message)
				assert.NotContains(t, err.Error(), "-sources")
			default: // loopback: dialed, refused by the closed port
				assert.Empty(t, allowed)
				assert.NotErrorAs(t, err, new(*egress.AddressNotAllowedError))
			}
		})
	}
}

// KubeAs gives the clientset ForRelease gives a Release of the same
// identity, built once.
func TestKubeAs(t *testing.T) {
	f := newFixture(t, Options{})
	id := Identity{Namespace: ns, Name: "deployer"}
	kube, err := f.provider.KubeAs(id)
	require.NoError(t, err)
	r := release("")
	r.Spec.ServiceAccountName = "deployer"
	access, err := f.provider.ForRelease(context.Background(), r)
	require.NoError(t, err)
	assert.Same(t, access.Home, kube)
	assert.Equal(t, []Identity{id}, f.identities, "the clients of an identity are built once")
}
