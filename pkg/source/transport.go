package source

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/kumodo/convoy-apiserver/pkg/sourcehttp"
)

// clientFor returns the client of the TLS settings tlsCfg (nil: the system
// roots), whose hash is tlsKey; clients are kept, with their connections.
func (f *Fetcher) clientFor(tlsCfg *tls.Config, tlsKey string) *sourcehttp.Client {
	if c, ok := f.clients.Get(tlsKey); ok {
		return c
	}
	c := sourcehttp.New(sourcehttp.Options{
		Dialer: f.dialer(), TLS: tlsCfg,
		PlainLoopback: f.opts.Policy.AllowLoopback, MaxManifest: int64(f.opts.MaxArtifactBytes),
	})
	f.clients.Put(tlsKey, c)
	return c
}

// dialer is the dialer of the sources' connections: the address policy,
// or the tests' Control.
func (f *Fetcher) dialer() *net.Dialer {
	d := f.opts.Policy.Dialer(30 * time.Second)
	if f.dialControl != nil {
		d.Control = f.dialControl
	}
	return d
}
