package drift

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/park"
	"github.com/kumodo/convoy-apiserver/pkg/render"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// fakeTargets gives an Access whose Home answers every read of a ConfigMap
// or Secret with inputErr (NotFound when nil), or fails with err.
type fakeTargets struct {
	err      error
	inputErr error
}

func (f fakeTargets) ForRelease(_ context.Context, release *convoyv1alpha1.Release) (*cluster.Access, error) {
	if f.err != nil {
		return nil, f.err
	}
	home := fake.NewClientset()
	if f.inputErr != nil {
		home.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, f.inputErr
		})
	}
	return &cluster.Access{
		Identity: cluster.Identity{Namespace: release.Namespace, Name: "deployer"},
		Home:     home,
		Target:   &cluster.Target{},
	}, nil
}

// testRenderEngine returns a render Engine of its own: a Fetcher of the
// default Options, charts templated in process, the default Limits.
func testRenderEngine() *render.Engine {
	return render.NewEngine(source.NewFetcher(source.Options{}), nil, render.Limits{})
}

// The failures found before the compare become Undetermined reports with a
// reason, as the InSync condition shows them.
// Reasons of each class that no package declares, to see a new reason
// classified by its class alone (declared once per process: -count=N).
var (
	testInvalid   = failure.Declare(failure.Reason{Name: "TestOnlyDriftInvalid", Class: failure.ClassInvalid, Shows: []failure.Where{failure.InSync}, Means: "m", Action: "a"})
	testNotFound  = failure.Declare(failure.Reason{Name: "TestOnlyDriftNotFound", Class: failure.ClassNotFound, Shows: []failure.Where{failure.InSync}, Means: "m", Action: "a"})
	testOverLimit = failure.Declare(failure.Reason{Name: "TestOnlyDriftOverLimit", Class: failure.ClassOverLimit, Shows: []failure.Where{failure.InSync}, Means: "m", Action: "a"})
)

func TestCheckFailuresBeforeTheCompare(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	forbidden := apierrors.NewForbidden(corev1.Resource("configmaps"), "web-manifests",
		errors.New(`User "system:serviceaccount:shop:deployer" cannot get resource "configmaps"`))
	cases := []struct {
		name        string
		inputErr    error
		targetErr   error
		pinned      bool
		ref         string
		wantReason  string
		wantMessage []string
		wantErr     error
	}{
		{name: "render fails", wantReason: ReasonRenderFailed, wantMessage: []string{"SourceNotFound: "}},
		{name: "cluster missing", targetErr: &failure.Error{Reason: cluster.ReasonClusterNotFound, Message: "Cluster.convoy.kumodo.io shop/east not found"},
			wantReason: cluster.ReasonClusterNotFound, wantMessage: []string{"Cluster.convoy.kumodo.io shop/east not found"}},
		{name: "the Cluster's Secret forbidden", targetErr: &failure.Error{Reason: failure.ReasonForbidden, Message: "ServiceAccount shop/deployer may not get Secret shop/east",
			Err: apierrors.NewForbidden(corev1.Resource("secrets"), "east", errors.New("no"))},
			wantReason: failure.ReasonForbidden, wantMessage: []string{"ServiceAccount shop/deployer may not get Secret shop/east"}},
		{name: "cluster unreachable while rendering", inputErr: refused,
			wantReason: failure.ReasonClusterUnreachable, wantMessage: []string{"the cluster is unreachable (connection refused)"}},
		{name: "cluster address not allowed while rendering",
			inputErr:   &url.Error{Op: "Get", URL: "https://169.254.169.254/api", Err: &net.OpError{Op: "dial", Err: egress.AddressPolicy{}.Control("tcp", "169.254.169.254:443", nil)}},
			wantReason: egress.ReasonAddressNotAllowed, wantMessage: []string{"connecting to 169.254.169.254:443 is not allowed: it is a link-local address"}},
		{name: "answer of the cluster too large while rendering",
			inputErr: fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", &failure.Error{Reason: cluster.ReasonResponseTooLarge,
				Message: "the answer of the API server of the local cluster to GET /apis is larger than 67108864 bytes, the limit of --max-target-response-bytes"}),
			wantReason: cluster.ReasonResponseTooLarge, wantMessage: []string{"larger than 67108864 bytes, the limit of --max-target-response-bytes"}},
		{name: "impersonation not granted", inputErr: apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "deployer",
			errors.New(`User "system:serviceaccount:convoy-system:convoy-apiserver" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "shop"`)),
			wantReason: cluster.ReasonImpersonationNotGranted, wantMessage: []string{"may not act as ServiceAccount shop/deployer",
				"kubectl create rolebinding convoy-apiserver:impersonate --namespace shop"}},
		{name: "input forbidden", inputErr: forbidden, wantReason: failure.ReasonForbidden,
			wantMessage: []string{"ServiceAccount shop/deployer may not read an input of the release", "source ConfigMap shop/web-manifests may not be read",
				`User "system:serviceaccount:shop:deployer" cannot get resource "configmaps"`}},
		{name: "pinned render forbidden", pinned: true, inputErr: forbidden, wantReason: failure.ReasonForbidden,
			wantMessage: []string{"ServiceAccount shop/deployer may not read an input of the release", "reading the Pinned render"}},
		// A reason a package adds is classified by its class alone.
		{name: "a new reason of class Invalid under the render", inputErr: failure.New(testInvalid, nil, "the thing is bad"),
			wantReason: ReasonRenderFailed, wantMessage: []string{testInvalid + ": ", "the thing is bad"}},
		{name: "a new reason of class NotFound under the render", inputErr: failure.New(testNotFound, nil, "no such thing"),
			wantReason: ReasonRenderFailed, wantMessage: []string{testNotFound + ": ", "no such thing"}},
		{name: "a new reason of class OverLimit under the render", inputErr: failure.New(testOverLimit, nil, "too big"),
			wantReason: testOverLimit, wantMessage: []string{"too big"}},
		{name: "inputs unavailable otherwise", inputErr: apierrors.NewServiceUnavailable("etcd is down"),
			wantReason: sourcefailure.ReasonInputUnavailable, wantMessage: []string{"etcd is down"}},
		{name: "stored render asked for and missing", ref: "0123456789abcdef", wantErr: render.ErrNotStored},
		{name: "an access error that names no reason: a bug of the Targets", targetErr: errors.New("the Cluster could not be read"),
			wantReason: failure.ReasonInternalError, wantMessage: []string{"the Cluster could not be read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(fakeTargets{err: tc.targetErr, inputErr: tc.inputErr}, testRenderEngine(), compare.NewEngine(nil, 1), nil)
			release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
				Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "web-manifests"}}}}
			if tc.pinned {
				release.Spec.Pin = &convoyv1alpha1.Pin{RenderRef: "0123456789abcdef"}
			}
			report, err := c.Check(context.Background(), release, Options{Render: tc.ref})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Equal(t, ReasonRenderNotStored, failure.ReasonOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, report.Result.Verdict)
			assert.Equal(t, tc.wantReason, report.Reason)
			for _, m := range tc.wantMessage {
				assert.Contains(t, report.Message, m)
			}
			assert.Nil(t, report.Desired)
		})
	}
}

func TestInSyncCondition(t *testing.T) {
	fresh := &desired.Result{Source: subresourcesv1alpha1.RenderSourceFresh, Render: &render.Render{Ref: "0123456789abcdef"}}
	cases := []struct {
		name        string
		report      *Report
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "in sync", report: &Report{Result: &compare.Result{Verdict: subresourcesv1alpha1.DiffInSync, Message: "all 2 objects are in sync"}, Desired: fresh},
			wantStatus: metav1.ConditionTrue, wantReason: "InSync", wantMessage: "render 0123456789abcdef (Fresh): all 2 objects are in sync"},
		{name: "drifted", report: &Report{Result: &compare.Result{Verdict: subresourcesv1alpha1.DiffDrifted, Message: "Deployment.apps shop/web is Modified: spec.replicas"}, Desired: fresh},
			wantStatus: metav1.ConditionFalse, wantReason: "Drifted", wantMessage: "render 0123456789abcdef (Fresh): Deployment.apps shop/web is Modified: spec.replicas"},
		{name: "undetermined before a render", report: &Report{Result: compare.Undetermined("RenderFailed", "SourceNotFound: x")},
			wantStatus: metav1.ConditionUnknown, wantReason: "Undetermined", wantMessage: "RenderFailed: SourceNotFound: x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.report.Condition()
			assert.Equal(t, convoyv1alpha1.ConditionInSync, c.Type)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.wantMessage, c.Message)
		})
	}
}

func TestInSyncConditionCutsLongMessages(t *testing.T) {
	r := &Report{Result: compare.Undetermined(ReasonRenderFailed, "TemplateFailed: "+strings.Repeat("fäil ", 20000))}
	c := r.Condition()
	assert.LessOrEqual(t, len(c.Message), 32*1024)
	assert.True(t, utf8.ValidString(c.Message), "no character is split")
	assert.True(t, strings.HasSuffix(c.Message, "truncated]"))
}

type panickingTargets struct{}

func (panickingTargets) ForRelease(context.Context, *convoyv1alpha1.Release) (*cluster.Access, error) {
	panic("injected panic")
}

func TestCheckPanicIsUndetermined(t *testing.T) {
	c := NewChecker(panickingTargets{}, testRenderEngine(), compare.NewEngine(nil, 1), nil)
	report, err := c.Check(context.Background(), &convoyv1alpha1.Release{}, Options{})
	require.NoError(t, err)
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, report.Result.Verdict)
	assert.Equal(t, failure.ReasonInternalError, report.Reason)
	assert.Contains(t, report.Message, "injected panic")

	_, err = c.Desired(context.Background(), &convoyv1alpha1.Release{}, desired.Ask{})
	assert.Equal(t, failure.ReasonInternalError, failure.ReasonOf(err))
	assert.ErrorContains(t, err, "injected panic")
}

// contextTargets records the ListedAfter of the context the Access is had
// with, then fails.
type contextTargets struct{ listedAfter *time.Time }

func (f contextTargets) ForRelease(ctx context.Context, _ *convoyv1alpha1.Release) (*cluster.Access, error) {
	*f.listedAfter = cluster.ListedAfter(ctx)
	return nil, errors.New("no access")
}

// A pass's options reach the packages below through the check's context:
// /diff's checks (no ListedAfter) share any fresh LIST.
func TestCheckPutsThePassOptionsInTheContext(t *testing.T) {
	event := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		opts Options
		want time.Time
	}{
		{name: "/diff", opts: Options{ExtraObjects: true}},
		{name: "a pass that follows an event", opts: Options{ListedAfter: event}, want: event},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got time.Time
			c := NewChecker(contextTargets{listedAfter: &got}, testRenderEngine(), compare.NewEngine(nil, 1), nil)
			_, err := c.Check(context.Background(), &convoyv1alpha1.Release{}, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A check whose fetch parks (a pass of the drift loop, whose registry does
// not answer) is an error the loop tells apart, not an Undetermined report:
// the pass writes nothing and runs again when the request ends. Without a
// Spot the same check waits, and reports what the request got.
func TestCheckWhoseFetchParks(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	fetcher := source.NewFetcher(source.Options{Policy: egress.AddressPolicy{AllowLoopback: true}, Timeout: time.Second})
	c := NewChecker(fakeTargets{}, render.NewEngine(fetcher, nil, render.Limits{}), compare.NewEngine(nil, 1), nil)
	release := &convoyv1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: convoyv1alpha1.ReleaseSpec{Source: convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{
			URL: "oci://" + silent.Addr().String() + "/charts/web", Tag: "1"}}}}

	woken := make(chan struct{}, 1)
	spot := park.NewSpot(50*time.Millisecond, func() { woken <- struct{}{} })
	spot.Begin()
	report, err := c.Check(context.Background(), release, Options{Spot: spot})
	assert.Nil(t, report)
	require.ErrorIs(t, err, park.ErrParked)
	<-woken // the request ended at the fetch timeout

	report, err = c.Check(context.Background(), release, Options{})
	require.NoError(t, err)
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, report.Result.Verdict)
	assert.Equal(t, sourcefailure.ReasonFetchTimeout, report.Reason)
	require.NoError(t, silent.Close())
}
