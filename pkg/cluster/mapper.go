// Package cluster holds what the observer needs to talk to a target cluster.
package cluster

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"
)

// DefaultRefreshInterval is the shortest time between two refreshes of a
// Mapper's discovery cache.
const DefaultRefreshInterval = 10 * time.Second

// Mapper is a REST mapper over a cached discovery client that refreshes its
// cache once when asked for a kind it does not know (a CRD installed since
// the last refresh) before it gives up. Refreshes are at least
// refreshInterval apart, so a render full of unknown kinds costs one
// discovery, not one per object.
type Mapper struct {
	deferred        *restmapper.DeferredDiscoveryRESTMapper
	clock           clock.PassiveClock
	refreshInterval time.Duration

	mu          sync.Mutex
	lastRefresh time.Time
}

var _ meta.RESTMapper = &Mapper{}

// NewMapper returns a Mapper on discovery.
func NewMapper(client discovery.DiscoveryInterface, clk clock.PassiveClock, refreshInterval time.Duration) *Mapper {
	return &Mapper{
		deferred:        restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client)),
		clock:           clk,
		refreshInterval: refreshInterval,
	}
}

// retry runs f, and once more after a refresh of the cache when f finds no
// match and the last refresh is old enough.
func retry[T any](m *Mapper, f func() (T, error)) (T, error) {
	v, err := f()
	if err == nil || !meta.IsNoMatchError(err) || !m.refresh() {
		return v, err
	}
	return f()
}

// refresh resets the cache unless it was reset within refreshInterval.
func (m *Mapper) refresh() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if !m.lastRefresh.IsZero() && now.Sub(m.lastRefresh) < m.refreshInterval {
		return false
	}
	m.lastRefresh = now
	m.deferred.Reset()
	return true
}

// KindFor implements meta.RESTMapper.
func (m *Mapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return retry(m, func() (schema.GroupVersionKind, error) { return m.deferred.KindFor(resource) })
}

// KindsFor implements meta.RESTMapper.
func (m *Mapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return retry(m, func() ([]schema.GroupVersionKind, error) { return m.deferred.KindsFor(resource) })
}

// ResourceFor implements meta.RESTMapper.
func (m *Mapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return retry(m, func() (schema.GroupVersionResource, error) { return m.deferred.ResourceFor(input) })
}

// ResourcesFor implements meta.RESTMapper.
func (m *Mapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return retry(m, func() ([]schema.GroupVersionResource, error) { return m.deferred.ResourcesFor(input) })
}

// RESTMapping implements meta.RESTMapper.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return retry(m, func() (*meta.RESTMapping, error) { return m.deferred.RESTMapping(gk, versions...) })
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return retry(m, func() ([]*meta.RESTMapping, error) { return m.deferred.RESTMappings(gk, versions...) })
}

// ResourceSingularizer implements meta.RESTMapper.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	return m.deferred.ResourceSingularizer(resource)
}
