package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

func TestInterval(t *testing.T) {
	r := &convoyv1alpha1.Release{}
	assert.Equal(t, DefaultInterval, Interval(r))
	r.Spec.SyncPolicy.Interval = &metav1.Duration{Duration: time.Minute}
	assert.Equal(t, time.Minute, Interval(r))
}
