package receiver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kumodo/convoy-apiserver/pkg/receiverindex"
)

// Refresher records a refresh request of a Release on behalf of requester
// ((*requests.Requester).Refresh).
type Refresher interface {
	Refresh(ctx context.Context, namespace, name, requester string) (metav1.MicroTime, error)
}

// Config is what the listener needs.
type Config struct {
	Options
	// Index finds the Ready Receiver of a path, in memory.
	Index receiverindex.Lookup
	// Releases lists the Releases a delivery may refresh.
	Releases ReleaseLister
	// Refresher records the refreshes.
	Refresher Refresher
	// Cert is the serving certificate (the aggregated API's); nil only
	// with PlainHTTP.
	Cert dynamiccertificates.CertKeyContentProvider
	// Clock is the clock of the limiters and the dedup; nil: the real one.
	Clock clock.PassiveClock
}

// Timeouts and bounds of the HTTP server.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	shutdownTimeout   = 10 * time.Second
)

// Listener serves the webhook deliveries of Receivers.
type Listener struct {
	cfg     Config
	limits  *limits
	dedup   *dedup
	handler http.Handler
	certs   certCache

	mu       sync.Mutex
	listener net.Listener
}

// New checks cfg and returns its Listener.
func New(cfg Config) (*Listener, error) {
	errs := cfg.Options.Validate()
	if cfg.Index == nil || cfg.Releases == nil || cfg.Refresher == nil {
		errs = append(errs, errors.New("the Index, the Releases and the Refresher are required"))
	}
	if cfg.Cert == nil && !cfg.PlainHTTP {
		errs = append(errs, errors.New("a serving certificate is required unless plain HTTP"))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, fmt.Errorf("the receivers' listener: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	l := &Listener{cfg: cfg, limits: newLimits(cfg.Options, cfg.Clock), dedup: newDedup(cfg.DedupWindow, cfg.DedupSize)}
	l.certs.provider = cfg.Cert
	l.handler = http.HandlerFunc(l.serve)
	return l, nil
}

// Handler returns the handler of deliveries.
func (l *Listener) Handler() http.Handler { return l.handler }

// Listen listens on BindAddress, if Run has not yet.
func (l *Listener) Listen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listener != nil {
		return nil
	}
	if l.cfg.BindAddress == "" {
		return errors.New("the receivers' listener has no bind address")
	}
	ln, err := net.Listen("tcp", l.cfg.BindAddress)
	if err != nil {
		return fmt.Errorf("listening for webhook deliveries on %s: %w", l.cfg.BindAddress, err)
	}
	l.listener = ln
	return nil
}

// Addr is the address the listener listens on, nil before Listen or Run.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listener == nil {
		return nil
	}
	return l.listener.Addr()
}

// Run listens (unless Listen did), serves HTTPS (HTTP with PlainHTTP,
// HTTP/1.1 only) until ctx is done, then shuts down gracefully.
func (l *Listener) Run(ctx context.Context) error {
	if err := l.Listen(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler:           l.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		Protocols:         protocols,
		// Deliveries under way end on their own at shutdown, with the
		// logger of ctx.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    klog.NewStandardLogger("INFO"),
	}
	ln := l.listener
	if !l.cfg.PlainHTTP {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.certs.get}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("Listening for webhook deliveries", "address", ln.Addr().String(), "plainHTTP", l.cfg.PlainHTTP)
	select {
	case err := <-done:
		return fmt.Errorf("serving webhook deliveries: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the receivers' listener: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving webhook deliveries: %w", err)
	}
	return nil
}
