package cluster

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// ReasonImpersonationNotGranted is the reason of a request that the API
// server refused because convoy-apiserver may not impersonate the Release's
// ServiceAccount: the Release's namespace has not granted it (see
// ImpersonationClusterRole).
var ReasonImpersonationNotGranted = failure.Declare(failure.Reason{
	Name: "ImpersonationNotGranted", Class: failure.ClassForbidden, Shows: everywhere,
	Means:  "the Release's namespace has not granted convoy-apiserver the impersonation of its ServiceAccounts",
	Action: "bind the ClusterRole the message names in the Release's namespace (see the tenancy docs), or move the Release to a namespace that opted in",
})

// everywhere: a failure of the Access or of a read of the target cluster
// shows in both conditions and in the subresources' answers.
var everywhere = []failure.Where{failure.InSync, failure.Healthy, failure.Response}

// ImpersonationClusterRole is the ClusterRole, shipped with convoy-apiserver,
// that allows impersonating ServiceAccounts. Bound by a RoleBinding in a
// namespace (the recommended install), it lets convoy-apiserver act as the
// ServiceAccounts of that namespace only: impersonating a ServiceAccount is
// authorized in the ServiceAccount's namespace.
const ImpersonationClusterRole = "convoy-apiserver:impersonate"

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
	who, ok := errtext.ImpersonationRefused(status.Status().Message)
	if !ok {
		return nil, false
	}
	subject := "--user " + who
	if sa, ok := strings.CutPrefix(who, "system:serviceaccount:"); ok {
		subject = "--serviceaccount " + sa
	}
	return failure.Quiet(ReasonImpersonationNotGranted, err,
		"convoy-apiserver may not act as %s: namespace %s has not granted it impersonation; grant it with "+
			"kubectl create rolebinding %s --namespace %s --clusterrole %s %s",
		id, id.Namespace, ImpersonationClusterRole, id.Namespace, ImpersonationClusterRole, subject), true
}
