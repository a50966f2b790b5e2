package receiver

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// certCache is the serving certificate of the provider, parsed once per
// content: the provider's files may change (a renewed certificate), and
// each handshake reads what it holds now.
type certCache struct {
	provider dynamiccertificates.CertKeyContentProvider

	mu        sync.Mutex
	cert, key []byte
	parsed    *tls.Certificate
}

// get is tls.Config's GetCertificate.
func (c *certCache) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.provider == nil {
		return nil, errors.New("no serving certificate")
	}
	cert, key := c.provider.CurrentCertKeyContent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed != nil && bytes.Equal(cert, c.cert) && bytes.Equal(key, c.key) {
		return c.parsed, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("the serving certificate %s: %w", c.provider.Name(), err)
	}
	c.cert, c.key, c.parsed = bytes.Clone(cert), bytes.Clone(key), &pair
	return c.parsed, nil
}
