package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// newFetcher is a Fetcher that may reach loopback (the registries of the
// tests), and only loopback (loopbackOnly), on a fake clock.
func newFetcher(t *testing.T, change ...func(*Options)) (*Fetcher, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	opts := Options{Policy: egress.AddressPolicy{AllowLoopback: true}, Clock: clk, Timeout: 20 * time.Second}
	for _, c := range change {
		c(&opts)
	}
	f := NewFetcher(opts)
	loopbackOnly(t, f)
	return f, clk
}

// dials are the addresses a Fetcher's dialer was asked to connect to, in
// order, each before its policy's verdict.
type dials struct {
	mu        sync.Mutex
	addresses []string
}

func (d *dials) taken() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.addresses
	d.addresses = nil
	return out
}

// loopbackOnly makes the dialer of f record each address, ask f's policy,
// and then refuse whatever the policy allowed off 127.0.0.0/8 and ::1,
// failing the test: no test sends a packet off loopback, even when a
// policy or a redirect goes wrong. It must be called before f's first
// fetch (f keeps its clients).
func loopbackOnly(t *testing.T, f *Fetcher) *dials {
	d := &dials{}
	f.dialControl = func(network, address string, c syscall.RawConn) error {
		d.mu.Lock()
		d.addresses = append(d.addresses, address)
		d.mu.Unlock()
		if err := f.opts.Policy.Control(network, address, c); err != nil {
			return err
		}
		if ap, err := netip.ParseAddrPort(address); err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the address policy allowed %s, off loopback: refused by the test", address)
			return fmt.Errorf("test: %s is off loopback", address)
		}
		return nil
	}
	return d
}

// startRegistry starts a registry on 127.0.0.1, closed with the test.
func startRegistry(t *testing.T, opts ociregistry.Options) *ociregistry.Server {
	t.Helper()
	s, err := ociregistry.Start(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// inputsOf reads Secrets of the namespace shop from memory.
func inputsOf(objs ...runtime.Object) Inputs {
	return ClientInputs{Client: fake.NewClientset(objs...)}
}

func secret(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Type: typ, Data: data}
}

// ociRelease is a Release of shop whose source is an OCI artifact.
func ociRelease(src convoyv1alpha1.OCIRepositorySource) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{OCIRepository: &src}}}
}

// helmRelease is a Release of shop whose source is a Helm repository chart.
func helmRelease(src convoyv1alpha1.HelmRepositorySource) *convoyv1alpha1.Release {
	return &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{HelmRepository: &src}}}
}

// fetchErr fetches release, expects a failure of reason, and returns it.
func fetchErr(t *testing.T, f *Fetcher, release *convoyv1alpha1.Release, inputs Inputs, reason string) *failure.Error {
	t.Helper()
	_, err := f.Fetch(context.Background(), release, inputs)
	require.Error(t, err)
	ferr, ok := failure.As(err)
	require.True(t, ok, "not a failure: %v", err)
	require.Equal(t, reason, ferr.Reason, "message: %s", ferr.Message)
	return ferr
}

// count counts the requests of method whose path holds part.
func count(requests []ociregistry.Request, method, part string) int {
	n := 0
	for _, r := range requests {
		if r.Method == method && strings.Contains(r.Path, part) {
			n++
		}
	}
	return n
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pemOf is the PEM of a test server's certificate.
func pemOf(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// TestMain registers the metrics before any test runs: registering them
// while a request left running by an earlier test counts one is a race of
// component-base's lazy metrics, whatever order -run picks. The caches'
// lookups too (agecache).
func TestMain(m *testing.M) {
	RegisterMetrics()
	agecache.RegisterMetrics()
	os.Exit(m.Run())
}
