package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

func TestImpersonationRefused(t *testing.T) {
	serviceAccounts := schema.GroupResource{Resource: "serviceaccounts"}
	id := Identity{Namespace: "team-a", Name: "deployer"}
	refusal := func(user string) error {
		// As kube-apiserver v1.37 writes it, with constrained impersonation.
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", fmt.Errorf(
			`User %q cannot impersonate-on:serviceaccount:get resource "configmaps" in API group "" in the namespace "team-a"`, user))
	}
	f, ok := ImpersonationRefused(fmt.Errorf("source ConfigMap team-a/web could not be read: %w", refusal("system:serviceaccount:convoy-system:convoy-apiserver")), id)
	require.True(t, ok)
	assert.Equal(t, ReasonImpersonationNotGranted, f.Reason)
	assert.Equal(t, "convoy-apiserver may not act as ServiceAccount team-a/deployer: namespace team-a has not granted it impersonation; grant it with "+
		"kubectl create rolebinding convoy-apiserver:impersonate --namespace team-a --clusterrole convoy-apiserver:impersonate "+
		"--serviceaccount convoy-system:convoy-apiserver", f.Message)
	assert.True(t, apierrors.IsForbidden(f), "the API error stays in the chain")

	f, ok = ImpersonationRefused(refusal("convoy-admin"), id)
	require.True(t, ok)
	assert.Contains(t, f.Message, "--user convoy-admin")

	// Without constrained impersonation, and for a cluster-scoped object.
	for _, err := range []error{
		apierrors.NewForbidden(serviceAccounts, "deployer", errors.New(`User "u" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`)),
		apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "view",
			errors.New(`User "u" cannot impersonate-on:serviceaccount:patch resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`)),
	} {
		f, ok := ImpersonationRefused(err, id)
		require.True(t, ok, "%v", err)
		assert.Contains(t, f.Message, "convoy-apiserver may not act as ServiceAccount team-a/deployer")
	}

	for _, err := range []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New(`User "system:serviceaccount:team-a:deployer" cannot get resource "configmaps" in API group "" in the namespace "team-a"`)),
		apierrors.NewNotFound(serviceAccounts, "deployer"),
		errors.New(`User "x" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`),
		nil,
	} {
		_, ok := ImpersonationRefused(err, id)
		assert.False(t, ok, "%v", err)
	}
	assert.Equal(t, "", failure.ReasonOf(nil))
}
