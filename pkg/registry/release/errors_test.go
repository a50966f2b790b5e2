package release

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// testReasons are reasons of each class that no package declares, to see
// a new reason mapped by its class alone (declared once per process:
// -count=N).
var testReasons = func() map[failure.Class]string {
	out := map[failure.Class]string{}
	for _, class := range []failure.Class{failure.ClassInvalid, failure.ClassNotFound, failure.ClassForbidden,
		failure.ClassOverLimit, failure.ClassUnavailable, failure.ClassInternal} {
		out[class] = failure.Declare(failure.Reason{Name: "TestOnly" + string(class), Class: class,
			Shows: []failure.Where{failure.Response}, Means: "m", Action: "a"})
	}
	return out
}()

// The REST storage only maps the reason pkg/drift gave a failure to an HTTP
// status.
func TestStatusOf(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	renderFailed := func(reason, message string) error {
		cause := &failure.Error{Reason: reason, Message: message}
		return failure.Quiet(drift.ReasonRenderFailed, cause, "%s: %s", reason, message)
	}
	cases := []struct {
		name        string
		err         error
		wantCode    int32
		wantReason  metav1.StatusReason
		wantMessage string
		wantCause   metav1.CauseType
	}{
		{name: "not stored", err: &failure.Error{Reason: drift.ReasonRenderNotStored, Message: "render not in the render store"},
			wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound,
			wantMessage: "render 0123456789abcdef is not in the render store of release shop/web"},
		{name: "render failed", err: renderFailed("TemplateFailed", "templates/deploy.yaml:3: nil pointer"),
			wantCode: http.StatusUnprocessableEntity, wantReason: ReasonRenderFailed, wantCause: "TemplateFailed",
			wantMessage: "rendering release shop/web failed (TemplateFailed): templates/deploy.yaml:3: nil pointer"},
		{name: "inputs unavailable", err: &failure.Error{Reason: sourcefailure.ReasonInputUnavailable, Message: "reading ConfigMap shop/x: timeout"},
			wantCode: http.StatusServiceUnavailable, wantReason: metav1.StatusReasonServiceUnavailable, wantMessage: "reading ConfigMap shop/x: timeout"},
		{name: "the identity refused", err: &failure.Error{Reason: failure.ReasonForbidden, Message: "ServiceAccount shop/default may not read an input of the release"},
			wantCode: http.StatusUnprocessableEntity, wantReason: ReasonIdentityForbidden,
			wantMessage: "release shop/web: the identity it acts as was refused: ServiceAccount shop/default may not read an input of the release"},
		{name: "cluster not found", err: &failure.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster.convoy.kumodo.io shop/east not found"},
			wantCode: http.StatusUnprocessableEntity, wantReason: "ClusterNotFound", wantMessage: "release shop/web: Cluster.convoy.kumodo.io shop/east not found"},
		{name: "a limit", err: &failure.Error{Reason: render.ReasonTooManyObjects, Message: "the render holds 6 objects"},
			wantCode: http.StatusUnprocessableEntity, wantReason: "TooManyObjects", wantMessage: "release shop/web: the render holds 6 objects"},
		{name: "cluster unreachable", err: &failure.Error{Reason: failure.ReasonClusterUnreachable, Message: "the cluster is unreachable (timeout)"},
			wantCode: http.StatusServiceUnavailable, wantReason: metav1.StatusReasonServiceUnavailable, wantMessage: "release shop/web: the cluster is unreachable (timeout)"},
		{name: "a panic", err: &failure.Error{Reason: failure.ReasonInternalError, Message: "internal error"},
			wantCode: http.StatusInternalServerError, wantReason: metav1.StatusReasonInternalError, wantMessage: "release shop/web: internal error"},
		{name: "an error without a reason", err: errors.New("connection refused"), wantCode: http.StatusInternalServerError,
			wantReason: metav1.StatusReasonInternalError, wantMessage: "release shop/web: connection refused"},
	}
	// A reason a package adds is mapped by its class alone.
	for class, want := range map[failure.Class]struct {
		code   int32
		reason metav1.StatusReason
	}{
		failure.ClassInvalid:     {http.StatusUnprocessableEntity, "TestOnlyInvalid"},
		failure.ClassNotFound:    {http.StatusUnprocessableEntity, "TestOnlyNotFound"},
		failure.ClassForbidden:   {http.StatusUnprocessableEntity, "TestOnlyForbidden"},
		failure.ClassOverLimit:   {http.StatusUnprocessableEntity, "TestOnlyOverLimit"},
		failure.ClassUnavailable: {http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable},
		failure.ClassInternal:    {http.StatusInternalServerError, metav1.StatusReasonInternalError},
	} {
		name := testReasons[class]
		cases = append(cases, struct {
			name        string
			err         error
			wantCode    int32
			wantReason  metav1.StatusReason
			wantMessage string
			wantCause   metav1.CauseType
		}{name: "a new reason of class " + string(class), err: failure.New(name, nil, "what failed"),
			wantCode: want.code, wantReason: want.reason, wantMessage: "what failed"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var status apierrors.APIStatus
			require.ErrorAs(t, statusOf(release, &subresourcesv1alpha1.ReleaseRenderOptions{Render: "0123456789abcdef"}, tc.err), &status)
			assert.Equal(t, tc.wantCode, status.Status().Code)
			assert.Equal(t, tc.wantReason, status.Status().Reason)
			assert.Contains(t, status.Status().Message, tc.wantMessage)
			if tc.wantCause != "" {
				require.NotNil(t, status.Status().Details)
				require.Len(t, status.Status().Details.Causes, 1)
				assert.Equal(t, tc.wantCause, status.Status().Details.Causes[0].Type)
			}
		})
	}
}

// A revision the source does not have is a 404 of the request, naming it;
// without ?revision= the same failure is a render that failed.
func TestStatusOfRevision(t *testing.T) {
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	cause := &failure.Error{Reason: sourcefailure.ReasonArtifactNotFound, Message: `https://git.example/app: revision "nope" is no commit hash, ref, tag or branch of the repository`}
	err := failure.Quiet(drift.ReasonRenderFailed, cause, "%s: %s", cause.Reason, cause.Message)
	cases := []struct {
		name       string
		revision   string
		wantCode   int32
		wantReason metav1.StatusReason
		wantIn     string
	}{
		{name: "at a revision", revision: "nope", wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound,
			wantIn: `release shop/web: no revision nope of its source: https://git.example/app: revision "nope" is no commit hash`},
		{name: "at the Release's own", wantCode: http.StatusUnprocessableEntity, wantReason: ReasonRenderFailed, wantIn: "rendering release shop/web failed (ArtifactNotFound)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var status apierrors.APIStatus
			require.ErrorAs(t, statusOf(release, &subresourcesv1alpha1.ReleaseRenderOptions{Revision: tc.revision}, err), &status)
			assert.Equal(t, tc.wantCode, status.Status().Code)
			assert.Equal(t, tc.wantReason, status.Status().Reason)
			assert.Contains(t, status.Status().Message, tc.wantIn)
		})
	}
}
