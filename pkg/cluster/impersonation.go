package cluster

import (
	"errors"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonImpersonationNotGranted is the reason of a request that the API
// server refused because convoy-apiserver may not impersonate the Release's
// ServiceAccount: the Release's namespace has not granted it (see
// ImpersonationClusterRole).
const ReasonImpersonationNotGranted = "ImpersonationNotGranted"

// ImpersonationClusterRole is the ClusterRole, shipped with convoy-apiserver,
// that allows impersonating ServiceAccounts. Bound by a RoleBinding in a
// namespace (the recommended install), it lets convoy-apiserver act as the
// ServiceAccounts of that namespace only: impersonating a ServiceAccount is
// authorized in the ServiceAccount's namespace.
const ImpersonationClusterRole = "convoy-apiserver:impersonate"

// impersonationRefusal matches the API server's refusal to let a user act
// as another, and names the user. kube-apiserver v1.37 writes, with
// constrained impersonation, `User "U" cannot impersonate-on:serviceaccount:get
// resource "configmaps" ...` (the verb that a narrower grant would need),
// and without it `User "U" cannot impersonate resource "serviceaccounts" ...`.
var impersonationRefusal = regexp.MustCompile(`User "([^"]+)" cannot impersonate(-on:[a-z-]+:[a-z]+)? resource `)

// ImpersonationRefused returns, when err is (or wraps) the API server's
// refusal to let convoy-apiserver act as id, a *failure.Error of reason
// ReasonImpersonationNotGranted that says what to bind in id's namespace.
func ImpersonationRefused(err error, id Identity) (*failure.Error, bool) {
	if !apierrors.IsForbidden(err) {
		return nil, false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, false
	}
	m := impersonationRefusal.FindStringSubmatch(status.Status().Message)
	if m == nil {
		return nil, false
	}
	subject := "--user " + m[1]
	if sa, ok := strings.CutPrefix(m[1], "system:serviceaccount:"); ok {
		subject = "--serviceaccount " + sa
	}
	return failure.Quiet(ReasonImpersonationNotGranted, err,
		"convoy-apiserver may not act as %s: namespace %s has not granted it impersonation; grant it with "+
			"kubectl create rolebinding %s --namespace %s --clusterrole %s %s",
		id, id.Namespace, ImpersonationClusterRole, id.Namespace, ImpersonationClusterRole, subject), true
}
