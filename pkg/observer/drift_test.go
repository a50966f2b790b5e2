package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/compare"
	"github.com/kumodo/convoy-apiserver/pkg/desired"
	"github.com/kumodo/convoy-apiserver/pkg/drift"
	"github.com/kumodo/convoy-apiserver/pkg/render"
)

func TestInSyncCondition(t *testing.T) {
	fresh := &desired.Result{Source: subresourcesv1alpha1.RenderSourceFresh, Render: &render.Render{Ref: "0123456789abcdef"}}
	cases := []struct {
		name        string
		report      *drift.Report
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "in sync", report: &drift.Report{Result: &compare.Result{Result: subresourcesv1alpha1.DiffInSync, Message: "all 2 objects are in sync"}, Desired: fresh},
			wantStatus: metav1.ConditionTrue, wantReason: "InSync", wantMessage: "render 0123456789abcdef (Fresh): all 2 objects are in sync"},
		{name: "drifted", report: &drift.Report{Result: &compare.Result{Result: subresourcesv1alpha1.DiffDrifted, Message: "apps/v1 Deployment shop/web is Modified: spec.replicas"}, Desired: fresh},
			wantStatus: metav1.ConditionFalse, wantReason: "Drifted", wantMessage: "render 0123456789abcdef (Fresh): apps/v1 Deployment shop/web is Modified: spec.replicas"},
		{name: "undetermined before a render", report: &drift.Report{Result: compare.Undetermined("RenderFailed", "SourceNotFound: x")},
			wantStatus: metav1.ConditionUnknown, wantReason: "Undetermined", wantMessage: "RenderFailed: SourceNotFound: x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := InSyncCondition(tc.report)
			assert.Equal(t, convoyv1alpha1.ConditionInSync, c.Type)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.wantMessage, c.Message)
		})
	}
}

func TestInterval(t *testing.T) {
	r := &convoyv1alpha1.Release{}
	assert.Equal(t, DefaultInterval, Interval(r))
	r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: time.Minute}
	assert.Equal(t, time.Minute, Interval(r))
}
