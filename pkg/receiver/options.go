package receiver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of the listener's options.
const (
	DefaultMaxBodyBytes     = 1 << 20
	DefaultQPS              = 50
	DefaultBurst            = 100
	DefaultPerReceiverQPS   = 5
	DefaultPerReceiverBurst = 20
	DefaultMaxInFlight      = 32
	DefaultDedupWindow      = 10 * time.Minute
	DefaultDedupSize        = 10000
)

// Options are the settings of the listener of webhook deliveries.
type Options struct {
	// BindAddress is HOST:PORT the listener listens on; empty: no
	// listener.
	BindAddress string
	// PlainHTTP serves HTTP instead of HTTPS; only on a loopback address.
	PlainHTTP bool
	// MaxBodyBytes is the largest body read; a larger one is refused (413).
	MaxBodyBytes int64
	// QPS and Burst bound the deliveries to known paths, all Receivers
	// together.
	QPS   float64
	Burst int
	// PerReceiverQPS and PerReceiverBurst bound the deliveries of one
	// Receiver.
	PerReceiverQPS   float64
	PerReceiverBurst int
	// MaxInFlight is how many deliveries are read and handled at once; the
	// others are refused (503).
	MaxInFlight int
	// DedupWindow is how long a delivery id is remembered: a delivery of
	// the same Receiver and id within it is a replay.
	DedupWindow time.Duration
	// DedupSize is how many delivery ids are remembered at most (the
	// oldest are forgotten first).
	DedupSize int
}

// NewOptions returns the default options: no listener.
func NewOptions() *Options {
	return &Options{
		MaxBodyBytes:     DefaultMaxBodyBytes,
		QPS:              DefaultQPS,
		Burst:            DefaultBurst,
		PerReceiverQPS:   DefaultPerReceiverQPS,
		PerReceiverBurst: DefaultPerReceiverBurst,
		MaxInFlight:      DefaultMaxInFlight,
		DedupWindow:      DefaultDedupWindow,
		DedupSize:        DefaultDedupSize,
	}
}

// AddFlags adds the flags of o to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "receiver-bind-address", o.BindAddress,
		"HOST:PORT the listener of webhook deliveries (Receivers) listens on, with HTTPS and the serving certificate of the secure port; empty: no listener, and no Receiver takes deliveries. "+
			"Behind an Ingress, have the Ingress re-encrypt to this HTTPS port: GitLab and Harbor send their token as a header.")
	fs.BoolVar(&o.PlainHTTP, "receiver-plain-http", o.PlainHTTP,
		"Serve webhook deliveries over plain HTTP instead of HTTPS; refused unless --receiver-bind-address is a loopback address (127.0.0.0/8, ::1, localhost): "+
			"GitLab's and Harbor's tokens travel in a header, which plain HTTP would show to the pod network. For a local proxy or development only.")
	fs.Int64Var(&o.MaxBodyBytes, "receiver-max-body-bytes", o.MaxBodyBytes,
		"Largest body of a webhook delivery read; a larger one is answered 413 without being read.")
	fs.Float64Var(&o.QPS, "receiver-qps", o.QPS,
		"Webhook deliveries per second to the paths of Receivers, all Receivers together (a path of no Receiver is not counted); past it, 429 with Retry-After.")
	fs.IntVar(&o.Burst, "receiver-burst", o.Burst, "Burst of --receiver-qps.")
	fs.Float64Var(&o.PerReceiverQPS, "receiver-qps-per-receiver", o.PerReceiverQPS,
		"Webhook deliveries per second to one Receiver; past it, 429 with Retry-After, and the other Receivers are not slowed.")
	fs.IntVar(&o.PerReceiverBurst, "receiver-burst-per-receiver", o.PerReceiverBurst, "Burst of --receiver-qps-per-receiver.")
	fs.IntVar(&o.MaxInFlight, "receiver-max-in-flight", o.MaxInFlight,
		"Webhook deliveries read and handled at once; past it, 503. The bodies held are at most this times --receiver-max-body-bytes.")
	fs.DurationVar(&o.DedupWindow, "receiver-dedup-window", o.DedupWindow,
		"How long the delivery id of a verified webhook delivery is remembered: the same id to the same Receiver within it is answered 200 \"duplicate\" and refreshes nothing.")
}

// Validate checks o: positive bounds, and plain HTTP only on a loopback
// address.
func (o *Options) Validate() []error {
	var errs []error
	if o.MaxBodyBytes <= 0 || o.QPS <= 0 || o.Burst <= 0 || o.PerReceiverQPS <= 0 || o.PerReceiverBurst <= 0 ||
		o.MaxInFlight <= 0 || o.DedupWindow <= 0 || o.DedupSize <= 0 {
		errs = append(errs, fmt.Errorf("--receiver-max-body-bytes, --receiver-qps, --receiver-burst, --receiver-qps-per-receiver, --receiver-burst-per-receiver, --receiver-max-in-flight, --receiver-dedup-window and the dedup size must be positive"))
	}
	if o.BindAddress != "" {
		if _, _, err := splitBindAddress(o.BindAddress); err != nil {
			errs = append(errs, err)
		}
	}
	if o.PlainHTTP && !loopback(o.BindAddress) {
		errs = append(errs, fmt.Errorf("--receiver-plain-http needs a loopback --receiver-bind-address (127.0.0.0/8, ::1, localhost), not %q: "+
			"plain HTTP would show the tokens GitLab and Harbor send as headers to the pod network; behind an Ingress, have it re-encrypt to the HTTPS port", o.BindAddress))
	}
	return errs
}

// splitBindAddress splits HOST:PORT, the port a number of 0 to 65535.
func splitBindAddress(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--receiver-bind-address %q is not HOST:PORT: %w", addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--receiver-bind-address %q: the port is not a number of 0 to 65535", addr)
	}
	return host, port, nil
}

// loopback tells whether the host of addr is a loopback address or
// localhost.
func loopback(addr string) bool {
	host, _, err := splitBindAddress(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
