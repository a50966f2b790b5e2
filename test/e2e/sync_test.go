//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

func syncPath(namespace, name string) string {
	return fmt.Sprintf("%s/namespaces/%s/releases/%s/sync", subresourcesAPI, namespace, name)
}

func TestSyncRecordsRequest(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "web")
	alice := user(t, "alice")
	grant(t, ns, "alice", subresourceRule("sync", "create"))

	before := time.Now().Add(-time.Second)
	out := mustKubectl(t, alice, "{}", "create", "--raw", syncPath(ns, "web"), "-f", "-")
	var got subresourcesv1alpha1.ReleaseSync
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "ReleaseSync", got.Kind)
	assert.Equal(t, "web", got.Name)
	assert.Equal(t, ns, got.Namespace)
	assert.Equal(t, "alice", got.RequestedBy)
	require.NotNil(t, got.RequestedAt)
	assert.True(t, got.RequestedAt.After(before), "requestedAt %s is recent", got.RequestedAt)

	release, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, got.RequestedAt.UTC().Format(metav1.RFC3339Micro), release.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt])
	_, err = time.Parse(time.RFC3339, release.Annotations[convoyv1alpha1.AnnotationSyncRequestedAt])
	assert.NoError(t, err, "the annotation is an RFC 3339 time")

	eventually(t, "an Event naming alice", func(ctx context.Context) error {
		events, err := kubeClient(t).EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "SyncRequested" && e.Regarding.Kind == "Release" && e.Regarding.Name == "web" &&
				e.Regarding.UID == release.UID && e.Note == "Sync requested by alice" {
				return nil
			}
		}
		return fmt.Errorf("no SyncRequested event for web among %d events", len(events.Items))
	})

	// A second request records a later time.
	out = mustKubectl(t, alice, `{"apiVersion":"subresources.convoy.kumodo.io/v1alpha1","kind":"ReleaseSync"}`,
		"create", "--raw", syncPath(ns, "web"), "-f", "-")
	var second subresourcesv1alpha1.ReleaseSync
	require.NoError(t, json.Unmarshal([]byte(out), &second))
	require.NotNil(t, second.RequestedAt)
	assert.True(t, second.RequestedAt.After(got.RequestedAt.Time), "second request %s after first %s", second.RequestedAt, got.RequestedAt)
}

func TestSyncRefusals(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	newRelease(t, ns, "web")
	grant(t, ns, "carol", subresourceRule("sync", "create"))
	carol := user(t, "carol")
	// Rights on another subresource, another verb, or the Release itself are not enough.
	grant(t, ns, "dave", subresourceRule("preview", "get"), subresourceRule("sync", "get"),
		rbacv1.PolicyRule{APIGroups: []string{"convoy.kumodo.io"}, Resources: []string{"releases"}, Verbs: []string{"get", "patch"}})
	dave := user(t, "dave")

	releaseBefore, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)

	cases := []struct {
		name       string
		kubeconfig string
		release    string
		body       string
		wantStatus string
	}{
		{name: "user without create releases/sync", kubeconfig: dave, release: "web", body: "{}", wantStatus: "Forbidden"},
		{name: "user with no role", kubeconfig: user(t, "erin"), release: "web", body: "{}", wantStatus: "Forbidden"},
		{name: "unknown release", kubeconfig: carol, release: "nope", body: "{}", wantStatus: "NotFound"},
		{name: "malformed body", kubeconfig: carol, release: "web", body: "{not json", wantStatus: "BadRequest"},
		{name: "wrong kind in body", kubeconfig: carol, release: "web", body: `{"apiVersion":"v1","kind":"Pod"}`, wantStatus: "BadRequest"},
		{name: "name in body does not match the path", kubeconfig: carol, release: "web",
			body: `{"apiVersion":"subresources.convoy.kumodo.io/v1alpha1","kind":"ReleaseSync","metadata":{"name":"other"}}`, wantStatus: "BadRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kubectl(t, tc.kubeconfig, tc.body, "create", "--raw", syncPath(ns, tc.release), "-f", "-", "-v=6")
			require.Error(t, r.err, "stdout: %s", r.stdout)
			assert.Contains(t, r.stderr, tc.wantStatus)
		})
	}

	// The observer's loops write conditions on the Release meanwhile, so
	// compare what a sync request would change: metadata, and no Event.
	releaseAfter, err := convoyClient(t).ConvoyV1alpha1().Releases(ns).Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, releaseBefore.Annotations, releaseAfter.Annotations, "a refused request changes nothing")
	assert.Equal(t, releaseBefore.Generation, releaseAfter.Generation)
	assert.NotContains(t, releaseAfter.Annotations, convoyv1alpha1.AnnotationSyncRequestedAt)
	events, err := kubeClient(t).EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		assert.NotEqual(t, "SyncRequested", e.Reason, "no sync was recorded: %s", e.Note)
	}
}
