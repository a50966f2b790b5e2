package source

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/credentials"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// repository is a Helm repository on 127.0.0.1: index.yaml and the charts
// it was given, behind basic authentication when user is set. It records
// the requests and whether they carried credentials.
type repository struct {
	*httptest.Server
	user, password string
	index          string
	files          map[string][]byte
	// redirects answer a path with a 302 to a URL, once the credentials
	// are checked.
	redirects map[string]string

	mu       sync.Mutex
	requests []string
}

func startRepository(t *testing.T, user, password string) *repository {
	t.Helper()
	return startRepositoryAt(t, "127.0.0.1:0", true, user, password)
}

// startRepositoryAt starts a repository on the loopback address addr, over
// https or plain http.
func startRepositoryAt(t *testing.T, addr string, https bool, user, password string) *repository {
	t.Helper()
	r := &repository{user: user, password: password, files: map[string][]byte{}, redirects: map[string]string{}}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		r.mu.Lock()
		r.requests = append(r.requests, fmt.Sprintf("%s %s auth=%v", req.Method, req.URL.Path, ok))
		r.mu.Unlock()
		if r.user != "" && (!ok || u != r.user || p != r.password) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if to, ok := r.redirects[req.URL.Path]; ok {
			http.Redirect(w, req, to, http.StatusFound)
			return
		}
		if req.URL.Path == "/index.yaml" {
			_, _ = w.Write([]byte(r.index))
			return
		}
		data, found := r.files[strings.TrimPrefix(req.URL.Path, "/")]
		if !found {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	}))
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	r.Listener.Close()
	r.Listener = ln
	if https {
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

func (r *repository) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// caSecret is the Secret with the CA of a test server.
func caSecret(name string, s *httptest.Server) *corev1.Secret {
	return secret(name, corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": pemOf(s)})
}

func TestHelmRepository(t *testing.T) {
	ctx := context.Background()
	repo := startRepository(t, "", "")
	charts := map[string][]byte{"1.2.0": []byte("chart 1.2.0"), "1.3.0": []byte("chart 1.3.0"), "1.4.0-rc.1": []byte("chart rc"), "2.0.0": []byte("chart 2")}
	var entries []string
	for v, data := range charts {
		repo.files["charts/web-"+v+".tgz"] = data
		entries = append(entries, fmt.Sprintf("  - {name: web, version: %q, urls: [charts/web-%s.tgz], digest: %s}", v, v, strings.TrimPrefix(sha256Hex(data), "sha256:")))
	}
	repo.index = "apiVersion: v1\nentries:\n  web:\n" + strings.Join(entries, "\n") + "\n"
	f, _ := newFetcher(t)
	inputs := inputsOf(caSecret("ca", repo.Server))
	helm := func(version string) convoyv1alpha1.HelmRepositorySource {
		return convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web", Version: version, CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}
	}
	for _, tc := range []struct{ version, want string }{
		{"", "2.0.0"},               // the highest that is not a prerelease
		{">=1.2.0 <2.0.0", "1.3.0"}, // a constraint picks its highest match
		{"~1.2", "1.2.0"},
		{"1.4.0-rc.1", "1.4.0-rc.1"}, // an exact version, prerelease or not
	} {
		src, err := f.Fetch(ctx, helmRelease(helm(tc.version)), inputs)
		require.NoError(t, err, tc.version)
		assert.Equal(t, tc.want, src.Resolved.Version, tc.version)
		assert.Equal(t, charts[tc.want], src.Chart, tc.version)
		assert.Equal(t, sha256Hex(charts[tc.want]), src.Resolved.Digest)
		assert.Equal(t, KindHelmRepository, src.Resolved.Kind)
	}
	assert.Equal(t, 1, countPrefix(repo.taken(), "GET /index.yaml"), "the index read once within its max age")

	fetchErr(t, f, helmRelease(helm(">=3.0.0")), inputs, sourcefailure.ReasonArtifactNotFound)
	other := helm("")
	other.Chart = "none"
	fetchErr(t, f, helmRelease(other), inputs, sourcefailure.ReasonArtifactNotFound)
	fetchErr(t, f, helmRelease(helm("not a version!")), inputs, sourcefailure.ReasonSourceInvalid)

	// The chart does not match the digest of the index: refused.
	repo.files["charts/web-2.0.0.tgz"] = []byte("tampered")
	fresh, _ := newFetcher(t)
	ferr := fetchErr(t, fresh, helmRelease(helm("2.0.0")), inputs, sourcefailure.ReasonDigestMismatch)
	assert.Contains(t, ferr.Message, "not the digest of the index")
}

func TestHelmRepositoryLimitsAndCredentials(t *testing.T) {
	ctx := context.Background()
	repo := startRepository(t, "bob", "pw")
	elsewhere := startRepository(t, "", "")
	chart := []byte("chart")
	elsewhere.files["web.tgz"] = chart
	repo.files["local.tgz"] = chart
	digest := strings.TrimPrefix(sha256Hex(chart), "sha256:")
	repo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [%s/web.tgz], digest: %s}\n  local:\n  - {version: 1.0.0, urls: [local.tgz], digest: %s}\n",
		elsewhere.URL, digest, digest)
	inputs := inputsOf(caSecret("ca", repo.Server),
		secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("pw")}),
		secret("nopassword", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob")}))
	src := func(chart, secretName string) convoyv1alpha1.HelmRepositorySource {
		s := convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: chart, CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}
		if secretName != "" {
			s.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: secretName}
		}
		return s
	}
	f, clk := newFetcher(t)
	fetchErr(t, f, helmRelease(src("web", "")), inputs, sourcefailure.ReasonSourceUnauthorized)
	fetchErr(t, f, helmRelease(src("web", "nopassword")), inputs, credentials.ReasonCredentialsInvalid)

	// The chart is on another host: its certificate is another (the same
	// CA here: httptest servers share one), and no credentials go there.
	got, err := f.Fetch(ctx, helmRelease(src("web", "creds")), inputs)
	require.NoError(t, err)
	assert.Equal(t, chart, got.Chart)
	assert.Equal(t, []string{"GET /web.tgz auth=false"}, elsewhere.taken())
	// The same bytes at another URL: downloaded from there, not served
	// from the chart kept for the first URL.
	_, err = f.Fetch(ctx, helmRelease(src("local", "creds")), inputs)
	require.NoError(t, err)
	assert.Contains(t, repo.taken(), "GET /local.tgz auth=true")
	// Once the confirmation is old, the kept chart is confirmed again on
	// its own origin, with the credentials.
	clk.SetTime(clk.Now().Add(2 * DefaultResolveMaxAge))
	_, err = f.Fetch(ctx, helmRelease(src("local", "creds")), inputs)
	require.NoError(t, err)
	assert.Contains(t, repo.taken(), "HEAD /local.tgz auth=true", "the cached chart: access confirmed on its own origin, with the credentials")

	small, _ := newFetcher(t, func(o *Options) { o.MaxIndexBytes = 64 })
	ferr := fetchErr(t, small, helmRelease(src("web", "creds")), inputs, sourcefailure.ReasonIndexTooLarge)
	assert.Contains(t, ferr.Message, "--max-index-bytes")
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// A chart URL to a link-local or a private address is refused by the
// dialer's hook, before any packet (a redirect there:
// TestHelmRepositoryRedirects).
func TestSourceAddressPolicy(t *testing.T) {
	repo := startRepository(t, "", "")
	chart := []byte("chart")
	digest := strings.TrimPrefix(sha256Hex(chart), "sha256:")
	repo.index = fmt.Sprintf("apiVersion: v1\nentries:\n  meta:\n  - {version: 1.0.0, urls: [https://169.254.169.254/latest/x.tgz], digest: %[1]s}\n  six:\n  - {version: 1.0.0, urls: [\"https://[fe80::1]/x.tgz\"], digest: %[1]s}\n  private:\n  - {version: 1.0.0, urls: [https://10.96.0.1/x.tgz], digest: %[1]s}\n", digest)
	inputs := inputsOf(caSecret("ca", repo.Server))
	f, _ := newFetcher(t)
	dialed := loopbackOnly(t, f)
	for chartName, want := range map[string]string{"meta": "169.254.169.254:443", "six": "[fe80::1]:443"} {
		ferr := fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: chartName,
			CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}), inputs, "AddressNotAllowed")
		assert.Contains(t, ferr.Message, "connecting to "+want+" is not allowed: it is a link-local address")
		// The refusal is the dialer's hook, which runs before a packet.
		assert.Contains(t, dialed.taken(), want)
	}
	// A private address is refused for sources (the cluster's own network
	// is not a tenant's to probe), and the message names the sources' flag.
	ferr := fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "private",
		CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}}), inputs, "AddressNotAllowed")
	assert.Contains(t, ferr.Message, "connecting to 10.96.0.1:443 is not allowed: it is in the private range 10.0.0.0/8, which may hold the cluster's own network (convoy-apiserver --allow-private-sources allows private addresses)")
	assert.Contains(t, dialed.taken(), "10.96.0.1:443")
	// Plain http to anything but loopback is refused before a connection.
	ferr = fetchErr(t, f, helmRelease(convoyv1alpha1.HelmRepositorySource{URL: "http://192.0.2.1/charts", Chart: "x"}), inputs, sourcefailure.ReasonSourceInvalid)
	assert.Contains(t, ferr.Message, "plain http to 192.0.2.1 is refused")
}

// A repository's redirect of the index or of a chart is followed, with the
// credentials only to the repository's own origin (scheme, host and port):
// not to another port of the same host, to which net/http itself would send
// them, nor to another loopback address. A redirect to a link-local address
// is refused by the dialer's hook, before any packet.
func TestHelmRepositoryRedirects(t *testing.T) {
	ctx := context.Background()
	chart := []byte("chart")
	digest := strings.TrimPrefix(sha256Hex(chart), "sha256:")
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - {version: 1.0.0, urls: [web.tgz], digest: %s}\n", digest)
	// otherAddress is another loopback address: on Linux all of 127.0.0.0/8
	// is. httptest's certificate is not valid for it, so it serves plain
	// http, which the loopback flag allows.
	other := "127.0.0.2:0"
	if ln, err := net.Listen("tcp", other); err != nil {
		t.Skipf("no loopback address %s here: %v", other, err)
	} else {
		ln.Close()
	}
	for _, tc := range []struct {
		name string
		// path is what the repository redirects: /index.yaml or /web.tgz.
		path string
		// target starts the server redirected to; nil: none, to is the URL.
		target func(t *testing.T) *repository
		to     string
		// auth is whether the target may see the credentials.
		auth bool
		// why is the refusal of the redirect, "" when followed.
		why string
	}{
		{name: "index, same origin", path: "/index.yaml", auth: true},
		{name: "index, same host, another port", path: "/index.yaml", target: func(t *testing.T) *repository { return startRepository(t, "", "") }},
		{name: "index, another loopback address", path: "/index.yaml", target: func(t *testing.T) *repository { return startRepositoryAt(t, other, false, "", "") }},
		{name: "index, link-local", path: "/index.yaml", to: "https://169.254.169.254/latest/index.yaml", why: egress.WhyLinkLocal},
		{name: "chart, same origin", path: "/web.tgz", auth: true},
		{name: "chart, same host, another port", path: "/web.tgz", target: func(t *testing.T) *repository { return startRepository(t, "", "") }},
		{name: "chart, another loopback address", path: "/web.tgz", target: func(t *testing.T) *repository { return startRepositoryAt(t, other, false, "", "") }},
		{name: "chart, link-local", path: "/web.tgz", to: "https://169.254.169.254/latest/web.tgz", why: egress.WhyLinkLocal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := startRepository(t, "bob", "pw")
			repo.index = index
			repo.files["web.tgz"] = chart
			// The target serves the index and the chart under /moved.
			target := repo
			if tc.target != nil {
				target = tc.target(t)
			}
			target.files["moved/index.yaml"] = []byte(index)
			target.files["moved/web.tgz"] = chart
			repo.redirects[tc.path] = cmp.Or(tc.to, target.URL+"/moved"+tc.path)
			inputs := inputsOf(caSecret("ca", repo.Server),
				secret("creds", corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("bob"), "password": []byte("pw")}))
			f, _ := newFetcher(t)
			dialed := loopbackOnly(t, f)
			release := helmRelease(convoyv1alpha1.HelmRepositorySource{URL: repo.URL, Chart: "web",
				SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "creds"}, CertSecretRef: &convoyv1alpha1.LocalObjectReference{Name: "ca"}})

			if tc.why != "" {
				ferr := fetchErr(t, f, release, inputs, egress.ReasonAddressNotAllowed)
				var notAllowed *egress.AddressNotAllowedError
				require.ErrorAs(t, ferr, &notAllowed)
				assert.Equal(t, tc.why, notAllowed.Why)
				assert.Equal(t, "169.254.169.254:443", notAllowed.Address)
				assert.Contains(t, dialed.taken(), "169.254.169.254:443", "refused by the dialer's hook")
				return
			}
			got, err := f.Fetch(ctx, release, inputs)
			require.NoError(t, err)
			assert.Equal(t, chart, got.Chart)
			requests := repo.taken()
			assert.Contains(t, requests, "GET "+tc.path+" auth=true", "the credentials go to the repository")
			if target != repo {
				requests = target.taken()
			}
			assert.Contains(t, requests, fmt.Sprintf("GET /moved%s auth=%v", tc.path, tc.auth))
		})
	}
}
