package compare

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/redact"
)

func newTestEngine(workers int) *Engine {
	return NewEngine(redact.NewWithKey([]byte("test")), workers)
}

func TestCompareInSync(t *testing.T) {
	desired := []*unstructured.Unstructured{
		deployment("shop", "web", 3, "shop:1"),
		configMap("shop", "settings", map[string]any{"a": "1"}),
		clusterRole("reader", "get", "list"),
	}
	f := newFake(liveOf(desired[0]), liveOf(desired[1]), liveOf(desired[2]))

	res := newTestEngine(4).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffInSync, res.Verdict)
	assert.Equal(t, ReasonInSync, res.Reason)
	assert.Equal(t, "all 3 objects are in sync", res.Message)
	require.Len(t, res.Objects, 3)
	assert.Equal(t, subresourcesv1alpha1.ObjectDiff{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web",
		Status: subresourcesv1alpha1.ObjectInSync,
	}, res.Objects[0])
	assert.Equal(t, subresourcesv1alpha1.ObjectDiff{
		Group: "", Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings",
		Status: subresourcesv1alpha1.ObjectInSync,
	}, res.Objects[1])
	assert.Equal(t, subresourcesv1alpha1.ObjectDiff{
		Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader",
		Status: subresourcesv1alpha1.ObjectInSync,
	}, res.Objects[2])
}

func TestCompareInSyncMessages(t *testing.T) {
	one := []*unstructured.Unstructured{configMap("shop", "a", nil)}
	res := newTestEngine(1).Compare(context.Background(), newFake(liveOf(one[0])), one)
	assert.Equal(t, "1 object is in sync", res.Message)

	res = newTestEngine(1).Compare(context.Background(), newFake(), nil)
	assert.Equal(t, subresourcesv1alpha1.DiffInSync, res.Verdict)
	assert.Equal(t, "the render has no objects", res.Message)
	assert.Empty(t, res.Objects)
}

func TestCompareMissing(t *testing.T) {
	desired := []*unstructured.Unstructured{
		deployment("shop", "web", 3, "shop:1"),
		configMap("shop", "settings", map[string]any{"a": "1"}),
		configMap("shop", "other", map[string]any{"a": "1"}),
	}
	f := newFake(liveOf(desired[0])) // neither ConfigMap exists

	res := newTestEngine(4).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, ReasonDrifted, res.Reason)
	assert.Equal(t, "ConfigMap shop/settings is Missing", res.Message, "the first drifted object in render order")
	require.Len(t, res.Objects, 3)
	assert.Equal(t, subresourcesv1alpha1.ObjectInSync, res.Objects[0].Status)
	assert.Equal(t, subresourcesv1alpha1.ObjectMissing, res.Objects[1].Status)
	assert.Equal(t, subresourcesv1alpha1.ObjectMissing, res.Objects[2].Status)
	assert.Empty(t, res.Objects[1].Changes)
	assert.Equal(t, 1, f.getCount(desired[1]))
	assert.Equal(t, 0, f.applyCount(desired[1]), "no dry run for a missing object")
	assert.Equal(t, 0, f.applyCount(desired[2]), "no dry run for a missing object")
	assert.Equal(t, 1, f.applyCount(desired[0]))
}

func TestCompareModified(t *testing.T) {
	desired := []*unstructured.Unstructured{
		configMap("shop", "settings", map[string]any{"a": "1"}),
		deployment("shop", "web", 3, "shop:2"),
		deployment("shop", "api", 1, "api:1"),
	}
	webLive := liveOf(deployment("shop", "web", 2, "shop:1"))
	apiLive := liveOf(desired[2])
	apiLive.Object["spec"].(map[string]any)["replicas"] = int64(5)
	f := newFake(liveOf(desired[0]), webLive, apiLive)

	res := newTestEngine(2).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, ReasonDrifted, res.Reason)
	assert.Equal(t, "Deployment.apps shop/web is Modified: spec.replicas, spec.template.spec.containers[name=app].image; no other manager than convoy's recorded these changes", res.Message)
	require.Len(t, res.Objects, 3)
	assert.Equal(t, subresourcesv1alpha1.ObjectInSync, res.Objects[0].Status)
	web := res.Objects[1]
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, web.Status)
	require.Len(t, web.Changes, 2)
	assert.Equal(t, "spec.replicas", web.Changes[0].Path)
	assert.Equal(t, subresourcesv1alpha1.ChangeReplace, web.Changes[0].Op)
	assert.JSONEq(t, `3`, string(web.Changes[0].Desired.Raw))
	assert.JSONEq(t, `2`, string(web.Changes[0].Live.Raw))
	assert.Equal(t, "spec.template.spec.containers[name=app].image", web.Changes[1].Path)
	assert.JSONEq(t, `"shop:2"`, string(web.Changes[1].Desired.Raw))
	assert.JSONEq(t, `"shop:1"`, string(web.Changes[1].Live.Raw))
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, res.Objects[2].Status)
	assert.Equal(t, "spec.replicas", res.Objects[2].Changes[0].Path)
}

func TestCompareModifiedMessageNamesAtMostThreePaths(t *testing.T) {
	desired := []*unstructured.Unstructured{configMap("shop", "settings", map[string]any{"a": "1", "b": "1", "c": "1", "d": "1", "e": "1"})}
	live := liveOf(configMap("shop", "settings", map[string]any{"a": "0", "b": "0", "c": "0", "d": "0", "e": "0"}))
	// A dry run that returns the desired object as it is, so that every
	// key differs from the live one.
	f := newFake(live)
	res := newTestEngine(1).Compare(context.Background(), f, desired)
	assert.Equal(t, "ConfigMap shop/settings is Modified: data.a, data.b, data.c and 2 more; no other manager than convoy's recorded these changes", res.Message)
	assert.Len(t, res.Objects[0].Changes, 5)
}

func TestCompareRemovedField(t *testing.T) {
	// A field that the render sets and another manager changed shows; a
	// field that only the live object has and the dry run drops (as SSA
	// drops a field convoy owned and no longer sets) shows as remove.
	desired := []*unstructured.Unstructured{configMap("shop", "settings", map[string]any{"a": "1"})}
	live := liveOf(configMap("shop", "settings", map[string]any{"a": "1", "old": "x"}))
	f := newFake(live)
	f.dryRun = func(desired, live *unstructured.Unstructured) *unstructured.Unstructured {
		out := live.DeepCopy()
		out.Object["data"] = desired.DeepCopy().Object["data"]
		return out
	}
	res := newTestEngine(1).Compare(context.Background(), f, desired)
	require.Len(t, res.Objects[0].Changes, 1)
	c := res.Objects[0].Changes[0]
	assert.Equal(t, "data.old", c.Path)
	assert.Equal(t, subresourcesv1alpha1.ChangeRemove, c.Op)
	assert.Nil(t, c.Desired)
	assert.JSONEq(t, `"x"`, string(c.Live.Raw))
}

func TestCompareSecretIsRedacted(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	desired := []*unstructured.Unstructured{secret("shop", "db", map[string]any{"password": b64("new-hunter2"), "user": b64("admin-user")})}
	live := liveOf(secret("shop", "db", map[string]any{"password": b64("old-hunter1"), "user": b64("admin-user")}))
	live.SetAnnotations(map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + b64("old-hunter1") + `"}}`,
	})
	f := newFake(live)
	r := redact.NewWithKey([]byte("test"))

	res := NewEngine(r, 2).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	require.Len(t, res.Objects, 1)
	assert.Equal(t, subresourcesv1alpha1.ObjectModified, res.Objects[0].Status)
	require.Len(t, res.Objects[0].Changes, 1, "an unchanged value shows no change")
	c := res.Objects[0].Changes[0]
	assert.Equal(t, "data.password", c.Path)
	assert.Equal(t, subresourcesv1alpha1.ChangeReplace, c.Op)
	assert.JSONEq(t, `"`+r.Marker([]byte("new-hunter2"))+`"`, string(c.Desired.Raw))
	assert.JSONEq(t, `"`+r.Marker([]byte("old-hunter1"))+`"`, string(c.Live.Raw))
	assert.Equal(t, "Secret shop/db is Modified: data.password; no other manager than convoy's recorded these changes", res.Message)

	out, err := json.Marshal(res)
	require.NoError(t, err)
	for _, leaked := range []string{"new-hunter2", "old-hunter1", "admin-user", b64("new-hunter2"), b64("old-hunter1"), b64("admin-user")} {
		assert.NotContains(t, string(out), leaked)
	}
	assert.Equal(t, b64("new-hunter2"), desired[0].Object["data"].(map[string]any)["password"], "the desired object is not modified")
}

func TestCompareSecretValuesLeaveErrorMessages(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("s3cr3t-value"))
	desired := []*unstructured.Unstructured{secret("shop", "db", map[string]any{"password": b64})}
	f := newFake(liveOf(desired[0]))
	f.applyErr[keyOf(desired[0])] = apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db",
		fmt.Errorf(`admission webhook "check.example.com" denied the request: password s3cr3t-value (%s) is weak`, b64))
	res := newTestEngine(1).Compare(context.Background(), f, desired)
	assert.Equal(t, ReasonDryRunRejected, res.Reason)
	assert.NotContains(t, res.Message, "s3cr3t-value")
	assert.NotContains(t, res.Message, b64)
	assert.Contains(t, res.Message, "is weak")
}

func connRefused() error {
	return &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/apis/apps/v1/namespaces/shop/deployments/web", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

func TestCompareErrors(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name      string
		getErr    error
		applyErr  error
		reason    string
		inMessage []string
		wantApply int
	}{
		{
			name:      "no kind match",
			getErr:    fmt.Errorf("mapping: %w", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, SearchedVersions: []string{"v1"}}),
			reason:    ReasonNoKindMatch,
			inMessage: []string{"does not know the kind", `no matches for kind "Deployment" in version "apps/v1"`},
		},
		{
			name:      "resource not served (plain 404)",
			getErr:    apierrors.NewGenericServerResponse(404, "GET", gr, "web", "404 page not found", 0, true),
			reason:    ReasonNoKindMatch,
			inMessage: []string{"does not serve"},
		},
		{
			name:      "dry run invalid",
			applyErr:  apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")}),
			reason:    ReasonDryRunRejected,
			inMessage: []string{"rejected the dry run (422 Invalid)", "spec.replicas"},
			wantApply: 1,
		},
		{
			name:      "dry run bad request",
			applyErr:  apierrors.NewBadRequest("bad"),
			reason:    ReasonDryRunRejected,
			inMessage: []string{"400 BadRequest"},
			wantApply: 1,
		},
		{
			name:      "dry run denied by a ValidatingAdmissionPolicy (403)",
			applyErr:  apierrors.NewForbidden(gr, "web", errors.New("ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas' denied request: too many replicas")),
			reason:    ReasonDryRunRejected,
			inMessage: []string{"admission denied the dry run (403 Forbidden)", "too many replicas"},
			wantApply: 1,
		},
		{
			name:      "dry run denied by a webhook (403)",
			applyErr:  apierrors.NewForbidden(gr, "web", errors.New(`admission webhook "policy.example.com" denied the request: no`)),
			reason:    ReasonDryRunRejected,
			wantApply: 1,
		},
		{
			name:      "dry run forbidden by RBAC",
			applyErr:  apierrors.NewForbidden(gr, "web", errors.New(`User "convoy" cannot patch resource "deployments"`)),
			reason:    failure.ReasonForbidden,
			inMessage: []string{"ServiceAccount shop/deployer may not patch it (the server-side apply dry run) (403 Forbidden)", "cannot patch"},
			wantApply: 1,
		},
		{
			name:      "get forbidden",
			getErr:    apierrors.NewForbidden(gr, "web", errors.New(`User "convoy" cannot get resource "deployments"`)),
			reason:    failure.ReasonForbidden,
			inMessage: []string{"Deployment.apps shop/web: ServiceAccount shop/deployer may not get it (403 Forbidden)"},
		},
		{
			name:   "get forbidden, even with admission words",
			getErr: apierrors.NewForbidden(gr, "web", errors.New(`denied request`)),
			reason: failure.ReasonForbidden,
		},
		{
			name:      "unauthorized",
			getErr:    apierrors.NewUnauthorized("token expired"),
			reason:    failure.ReasonForbidden,
			inMessage: []string{"401 Unauthorized", "the credentials of ServiceAccount shop/deployer were refused"},
		},
		{
			name:      "read failed",
			getErr:    apierrors.NewBadRequest("bad get"),
			reason:    ReasonReadFailed,
			inMessage: []string{"reading the live object failed (400 BadRequest)", "bad get"},
		},
		{
			name:   "read failed, not an API error",
			getErr: errors.New("decoding: unexpected end"),
			reason: ReasonReadFailed,
		},
		{
			name:      "connection refused",
			getErr:    connRefused(),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"unreachable (connection refused)", "10.0.0.1:6443"},
		},
		{
			name:      "connection refused on the dry run",
			applyErr:  connRefused(),
			reason:    failure.ReasonClusterUnreachable,
			wantApply: 1,
		},
		{
			name:      "bare ECONNREFUSED",
			getErr:    fmt.Errorf("dial: %w", syscall.ECONNREFUSED),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"connection refused"},
		},
		{
			name:      "DNS",
			getErr:    &url.Error{Op: "Get", URL: "https://k8s.example", Err: &net.DNSError{Err: "no such host", Name: "k8s.example", IsNotFound: true}},
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"DNS lookup failed"},
		},
		{
			name:      "deadline",
			getErr:    &url.Error{Op: "Get", URL: "https://k8s.example", Err: context.DeadlineExceeded},
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"timed out"},
		},
		{
			name:      "service unavailable",
			getErr:    apierrors.NewServiceUnavailable("etcd is down"),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"server error (503 ServiceUnavailable)", "etcd is down"},
		},
		{
			name:      "timeout on the dry run",
			applyErr:  apierrors.NewTimeoutError("request did not complete within 60s", 1),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"504 Timeout"},
			wantApply: 1,
		},
		{
			name:      "internal error",
			applyErr:  apierrors.NewInternalError(errors.New("boom")),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"500 InternalError"},
			wantApply: 1,
		},
		{
			name:      "too many requests",
			getErr:    apierrors.NewTooManyRequests("slow down", 2),
			reason:    failure.ReasonClusterUnreachable,
			inMessage: []string{"throttled", "429 TooManyRequests"},
		},
		{
			name:      "dry run failed without an answer",
			applyErr:  errors.New("encoding the object: bad value"),
			reason:    ReasonDryRunFailed,
			wantApply: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			web := deployment("shop", "web", 3, "shop:1")
			desired := []*unstructured.Unstructured{web}
			f := newFake(liveOf(web))
			f.who = "ServiceAccount shop/deployer"
			if tt.getErr != nil {
				f.getErr[keyOf(web)] = tt.getErr
			}
			if tt.applyErr != nil {
				f.applyErr[keyOf(web)] = tt.applyErr
			}

			res := newTestEngine(2).Compare(context.Background(), f, desired)

			assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, res.Verdict)
			assert.Equal(t, tt.reason, res.Reason)
			assert.True(t, strings.HasPrefix(res.Message, "Deployment.apps shop/web: "), res.Message)
			for _, s := range tt.inMessage {
				assert.Contains(t, res.Message, s)
			}
			assert.Empty(t, res.Objects)
			assert.Equal(t, 1, f.getCount(web))
			assert.Equal(t, tt.wantApply, f.applyCount(web))
		})
	}
}

func TestCompareFirstErrorInRenderOrderWins(t *testing.T) {
	for _, workers := range []int{2, 8} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			desired := configMaps(6)
			f := newFake()
			for _, o := range desired {
				f.live[keyOf(o)] = liveOf(o)
			}
			// Object 1 fails late, object 3 fails at once: 1 wins.
			f.delay[keyOf(desired[1])] = 50 * time.Millisecond
			f.getErr[keyOf(desired[1])] = apierrors.NewBadRequest("late")
			f.getErr[keyOf(desired[3])] = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm-003", errors.New("early"))

			res := newTestEngine(workers).Compare(context.Background(), f, desired)

			assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, res.Verdict)
			assert.Equal(t, ReasonReadFailed, res.Reason)
			assert.True(t, strings.HasPrefix(res.Message, "ConfigMap shop/cm-001: "), res.Message)
			assert.False(t, f.wasCanceled(desired[1]), "an object before the failed one is not canceled")
		})
	}
}

func TestCompareCancelsObjectsAfterTheError(t *testing.T) {
	desired := configMaps(20)
	f := newFake()
	for i, o := range desired {
		f.live[keyOf(o)] = liveOf(o)
		if i > 0 {
			f.delay[keyOf(o)] = time.Minute // only ends when canceled
		}
	}
	f.getErr[keyOf(desired[0])] = apierrors.NewBadRequest("first")

	start := time.Now()
	res := newTestEngine(4).Compare(context.Background(), f, desired)

	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, ReasonReadFailed, res.Reason)
	assert.True(t, strings.HasPrefix(res.Message, "ConfigMap shop/cm-000: "), res.Message)
	started := 0
	for _, o := range desired[1:] {
		if f.getCount(o) > 0 {
			started++
			assert.True(t, f.wasCanceled(o))
		}
		assert.Zero(t, f.applyCount(o))
	}
	assert.Less(t, started, 19, "objects after the error are no longer started")
}

func TestCompareWorkersBound(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			desired := configMaps(30)
			f := newFake()
			for _, o := range desired {
				f.live[keyOf(o)] = liveOf(o)
			}
			f.callDelay = 2 * time.Millisecond

			res := newTestEngine(workers).Compare(context.Background(), f, desired)

			assert.Equal(t, subresourcesv1alpha1.DiffInSync, res.Verdict)
			assert.LessOrEqual(t, int(f.maxInflight.Load()), workers)
			if workers > 1 {
				assert.Greater(t, int(f.maxInflight.Load()), 1, "objects are compared in parallel")
			}
		})
	}
}

func TestCompareCallCounts(t *testing.T) {
	var desired []*unstructured.Unstructured
	f := newFake()
	for i := range 40 {
		d := deployment("shop", fmt.Sprintf("web-%02d", i), 2, "shop:1")
		desired = append(desired, d)
		switch i % 3 {
		case 0: // in sync
			f.live[keyOf(d)] = liveOf(d)
		case 1: // modified
			f.live[keyOf(d)] = liveOf(deployment("shop", d.GetName(), 1, "shop:0"))
		case 2: // missing
		}
	}

	res := newTestEngine(5).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, "Deployment.apps shop/web-01 is Modified: spec.replicas, spec.template.spec.containers[name=app].image; no other manager than convoy's recorded these changes", res.Message)
	for i, d := range desired {
		assert.Equal(t, 1, f.getCount(d), d.GetName())
		want := 1
		if i%3 == 2 {
			want = 0
		}
		assert.Equal(t, want, f.applyCount(d), d.GetName())
		assert.Equal(t, d.GetName(), res.Objects[i].Name, "render order")
	}
}

func TestCompareCanceledByCaller(t *testing.T) {
	desired := configMaps(3)
	f := newFake()
	for _, o := range desired {
		f.live[keyOf(o)] = liveOf(o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := newTestEngine(2).Compare(ctx, f, desired)
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, res.Verdict)
	assert.Equal(t, ReasonCanceled, res.Reason)
	assert.True(t, strings.HasPrefix(res.Message, "ConfigMap shop/cm-000: "), res.Message)
}

func TestCompareInvalidObject(t *testing.T) {
	res := newTestEngine(2).Compare(context.Background(), newFake(), []*unstructured.Unstructured{configMap("shop", "a", nil), nil})
	assert.Equal(t, ReasonInvalidObject, res.Reason)
	res = newTestEngine(2).Compare(context.Background(), newFake(), []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap"}}})
	assert.Equal(t, ReasonInvalidObject, res.Reason)
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, res.Verdict)
}

func TestCompareDoesNotModifyInputs(t *testing.T) {
	desired := []*unstructured.Unstructured{deployment("shop", "web", 3, "shop:2"), secret("shop", "db", map[string]any{"p": "YQ=="})}
	live := []*unstructured.Unstructured{liveOf(deployment("shop", "web", 2, "shop:1")), liveOf(secret("shop", "db", map[string]any{"p": "Yg=="}))}
	f := newFake(live...)
	dryRun := []*unstructured.Unstructured{ssaImitation(desired[0], live[0]), ssaImitation(desired[1], live[1])}
	f.dryRun = func(d, _ *unstructured.Unstructured) *unstructured.Unstructured {
		if d.GetKind() == "Secret" {
			return dryRun[1]
		}
		return dryRun[0]
	}
	before := func(objs []*unstructured.Unstructured) []map[string]any {
		var out []map[string]any
		for _, o := range objs {
			out = append(out, o.DeepCopy().Object)
		}
		return out
	}
	d0, l0, r0 := before(desired), before(live), before(dryRun)

	res := newTestEngine(2).Compare(context.Background(), f, desired)

	assert.Equal(t, subresourcesv1alpha1.DiffDrifted, res.Verdict)
	assert.Equal(t, d0, before(desired))
	assert.Equal(t, l0, before(live))
	assert.Equal(t, r0, before(dryRun))
}

func TestUndetermined(t *testing.T) {
	assert.Equal(t, &Result{
		Verdict: subresourcesv1alpha1.DiffUndetermined,
		Reason:  "RenderFailed",
		Message: "rendering: chart not found",
	}, Undetermined("RenderFailed", "rendering: chart not found"))
}

func TestNewEngineDefaults(t *testing.T) {
	e := NewEngine(nil, 0)
	assert.Equal(t, DefaultWorkers, e.workers)
	assert.NotNil(t, e.redactor)
}

func TestCompareClientReturnsNothing(t *testing.T) {
	desired := []*unstructured.Unstructured{configMap("shop", "a", nil)}
	f := newFake(liveOf(desired[0]))
	f.dryRun = func(_, _ *unstructured.Unstructured) *unstructured.Unstructured { return nil }
	res := newTestEngine(1).Compare(context.Background(), f, desired)
	assert.Equal(t, ReasonDryRunFailed, res.Reason)
	assert.Contains(t, res.Message, "no object")
}

// panicking panics on every read of one object.
type panicking struct {
	*fakeClient
	name string
}

func (p panicking) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if name == p.name {
		panic("injected panic")
	}
	return p.fakeClient.Get(ctx, gvk, namespace, name)
}

// A panic while comparing one object (in a goroutine of its own, where no
// caller could recover it) ends the compare as Undetermined/InternalError.
func TestComparePanicIsAnInternalError(t *testing.T) {
	web, settings := deployment("shop", "web", 3, "shop:1"), configMap("shop", "settings", nil)
	res := newTestEngine(2).Compare(context.Background(), panicking{fakeClient: newFake(liveOf(web), liveOf(settings)), name: "web"},
		[]*unstructured.Unstructured{settings, web})
	assert.Equal(t, subresourcesv1alpha1.DiffUndetermined, res.Verdict)
	assert.Equal(t, failure.ReasonInternalError, res.Reason)
	assert.Contains(t, res.Message, "Deployment.apps shop/web: internal error")
	assert.Contains(t, res.Message, "injected panic")
}
