package flight

import (
	"context"
	"fmt"
	"sync"
)

// slots bound the requests to registries and repositories that run at once
// (a tag's HEAD, an index, a download and what is read of it): all of them
// (--max-concurrent-fetches), and those started for the Releases of one
// namespace (--max-concurrent-fetches-per-namespace), so that a tenant whose
// registry never answers holds its share only and the other namespaces keep
// fetching. A slot is taken by the request itself (see Group.Do), not
// by the callers waiting for it: a shared request whose callers gave up
// keeps its slot until it ends, within the fetch timeout, and a caller
// holds no slot while it waits, so no request ever waits for a slot that a
// caller waiting for it holds.
type slots struct {
	all              chan struct{}
	perNamespace     int
	running, waiting Gauge

	mu         sync.Mutex
	namespaces map[string]*namespaceSlots
}

// namespaceSlots are the slots of one namespace.
type namespaceSlots struct {
	held chan struct{}
	// users hold or wait for one of them; the entry goes at zero, so the
	// map holds the namespaces that fetch now, not every one that ever did.
	users int
}

func newSlots(all, perNamespace int, running, waiting Gauge) *slots {
	if running == nil {
		running = nopGauge{}
	}
	if waiting == nil {
		waiting = nopGauge{}
	}
	return &slots{all: make(chan struct{}, all), perNamespace: min(perNamespace, all), running: running, waiting: waiting,
		namespaces: map[string]*namespaceSlots{}}
}

type nopGauge struct{}

func (nopGauge) Inc() {}
func (nopGauge) Dec() {}

// SlotError is a request that found no slot before its context ended: one
// of its namespace's (Namespace set) or one of all. Err is the context's
// cause.
type SlotError struct {
	Namespace string
	Err       error
}

func (e *SlotError) Error() string {
	if e.Namespace != "" {
		return fmt.Sprintf("waiting for one of the requests of namespace %s running now: %v", e.Namespace, e.Err)
	}
	return fmt.Sprintf("waiting for one of the requests running now: %v", e.Err)
}

func (e *SlotError) Unwrap() error { return e.Err }

// acquire waits for a slot of namespace, then for one of all (so that a
// namespace at its cap holds none of all while it waits), until ctx ends. It
// returns the function that gives both back, which may be called more than
// once.
func (s *slots) acquire(ctx context.Context, namespace string) (func(), error) {
	s.mu.Lock()
	ns := s.namespaces[namespace]
	if ns == nil {
		ns = &namespaceSlots{held: make(chan struct{}, s.perNamespace)}
		s.namespaces[namespace] = ns
	}
	ns.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if ns.users--; ns.users == 0 {
			delete(s.namespaces, namespace)
		}
		s.mu.Unlock()
	}

	s.waiting.Inc()
	defer s.waiting.Dec()
	select {
	case ns.held <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, &SlotError{Namespace: namespace, Err: context.Cause(ctx)}
	}
	select {
	case s.all <- struct{}{}:
	case <-ctx.Done():
		<-ns.held
		leave()
		return nil, &SlotError{Err: context.Cause(ctx)}
	}
	s.running.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.running.Dec()
			<-s.all
			<-ns.held
			leave()
		})
	}, nil
}
