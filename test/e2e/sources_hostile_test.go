//go:build unix

package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// A bundle layer of about 200 bytes whose one file is a sparse file of
// 1 GiB (archive/tar gives its holes as NUL bytes it never reads) is
// refused before a byte of the file is read, and so is a chart of a
// ConfigMap holding one: convoy-apiserver's peak memory stays where it was
// (reading the bundle whole took it to 5 GiB). A sparse file within the
// limit is refused too, and a file of NUL bytes is not an empty render.
func TestSourcesSparseFiles(t *testing.T) {
	// Not parallel: it reads the server's peak memory, which the work of every
	// test raises.
	ctx := context.Background()
	ns := newNamespace(t)
	reg := startTestRegistry(t, ociregistry.Options{})
	push := func(repo string, format ociregistry.SparseFormat, name string, size int64) {
		layer, err := ociregistry.SparseTarGz(format, name, size)
		require.NoError(t, err)
		_, err = reg.PushBundleLayer(ctx, repo, "1", layer)
		require.NoError(t, err)
	}
	push("manifests/sparse", ociregistry.SparsePAX10, "big.yaml", 1<<30)
	push("manifests/small-sparse", ociregistry.SparsePAX01, "small.yaml", 4096)
	chart, err := ociregistry.SparseTarGz(ociregistry.SparsePAX00, "web/templates/big.yaml", 1<<30)
	require.NoError(t, err)

	before := peakMemory(t)
	newSourceRelease(t, ns, "sparse", ociSource(reg.URL("manifests/sparse"), "1", ""))
	newChartRelease(t, ns, "sparse-chart", chart)
	newSourceRelease(t, ns, "small-sparse", ociSource(reg.URL("manifests/small-sparse"), "1", ""))
	newDriftRelease(t, ns, "nul", map[string]string{"a.yaml": strings.Repeat("\x00", 4096)})
	assertUndetermined(t, ns, "sparse", sourcefailure.ReasonArtifactTooLarge,
		"the bundle inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes): its file big.yaml claims 1073741824 bytes")
	assertUndetermined(t, ns, "sparse-chart", sourcefailure.ReasonArtifactTooLarge,
		"the chart inflated is larger than the limit of 1048576 bytes (--max-artifact-bytes): its file web/templates/big.yaml claims 1073741824 bytes")
	assertSourceUndetermined(t, ns, "small-sparse", sourcefailure.ReasonArtifactUnsupported, "file small.yaml of the bundle is a sparse file, which is not supported")
	assertUndetermined(t, ns, "nul", "RenderFailed", "ManifestInvalid", "a.yaml: a NUL byte at offset 0: the file is not text")
	after := peakMemory(t)
	t.Logf("peak memory of convoy-apiserver: %d MiB before, %d MiB after", before>>20, after>>20)

	// VmHWM is the peak of the process's life, and the tests before this
	// one share the process: when they took it past the bound already,
	// what counts is that this test adds little to it.
	const bound, growth = 256 << 20, 64 << 20
	if before < bound {
		assert.Less(t, after, int64(bound), "peak memory of convoy-apiserver (it was %d MiB before)", before>>20)
	} else {
		assert.Less(t, after-before, int64(growth), "peak memory of convoy-apiserver grew from %d MiB to %d MiB", before>>20, after>>20)
	}
}

// A tenant's SSH server that advertises refs without end, of short names
// or of names of 60 KB, is stopped at the first ref past --max-git-refs or
// the first byte past --max-git-bytes, with the limit's reason, and the
// peak memory of convoy-apiserver stays where it was. The replica does not
// lead (the loops are the first replica's), so its memory holds its
// answers to this test's previews alone; its fetch timeout of two minutes
// would let such a server talk for two minutes without the limits.
func TestSourcesGitSSHLimits(t *testing.T) {
	// Not parallel: it starts a second replica.
	ctx := context.Background()
	ns := newNamespace(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	identity, err := ssh.MarshalPrivateKey(key, "")
	require.NoError(t, err)
	replica, err := env.cp.StartConvoyAPIServer(ctx, "--max-git-bytes=8388608", "--max-git-refs=1000", "--fetch-timeout=2m")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, replica.Stop()) })

	for _, tc := range []struct {
		name    string
		nameLen int
		reason  string
		message string
	}{
		{"refs", 16, sourcefailure.ReasonGitRefsTooMany, "advertises more than 1000 refs, the limit (--max-git-refs)"},
		{"bytes", 60000, sourcefailure.ReasonArtifactTooLarge, "is larger than the limit of 8388608 bytes (--max-git-bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endless, err := gitserver.EndlessRefs(t.TempDir(), tc.nameLen)
			require.NoError(t, err)
			srv := gitserver.RequireSSH(t, gitserver.SSHOptions{Root: t.TempDir(), AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}, UploadPack: endless})
			_, err = kubeClient(t).CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Data: map[string][]byte{"identity": pem.EncodeToMemory(identity), "known_hosts": srv.KnownHosts()}}, metav1.CreateOptions{})
			require.NoError(t, err)
			src := gitSource(srv.RepoURL("apps.git"), convoyv1alpha1.GitReference{Branch: "main"}, "")
			src.Git.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: tc.name}
			newSourceRelease(t, ns, tc.name, src, hourly)

			before := peakMemoryOf(t, replica.PID())
			code, body := replicaGet(t, replica, previewPath(ns, tc.name))
			after := peakMemoryOf(t, replica.PID())
			t.Logf("peak memory of the replica: %d MiB before, %d MiB after", before>>20, after>>20)
			assert.NotEqual(t, http.StatusOK, code)
			assert.Contains(t, body, tc.reason)
			assert.Contains(t, body, tc.message)
			assert.Less(t, after-before, int64(48<<20), "peak memory of the replica grew from %d MiB to %d MiB", before>>20, after>>20)
		})
	}
}
