package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Names the convoy-apiserver serving certificate must carry: the aggregator
// dials <service>.<namespace>.svc (resolved through the ExternalName Service to
// localhost) and verifies that name.
const (
	convoyNamespace = "convoy-system"
	convoyName      = "convoy-apiserver"
	convoyAPIGroup  = "subresources.convoy.kumodo.io"
	convoyVersion   = "v1alpha1"

	frontProxyClientName = "front-proxy-client"
)

// authority is a certificate authority held in memory.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func newAuthority(commonName string) (*authority, error) {
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generate key of CA %s: %w", commonName, err)
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", commonName, err)
	}
	return &authority{cert: c, key: key, certPEM: encodeCert(c.Raw)}, nil
}

// leaf describes a certificate issued by an authority.
type leaf struct {
	commonName    string
	organizations []string
	dnsNames      []string
	ips           []net.IP
	usages        []x509.ExtKeyUsage
}

// keyPair is a PEM-encoded certificate and its private key.
type keyPair struct {
	certPEM, keyPEM []byte
}

func (a *authority) issue(l leaf) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, fmt.Errorf("generate key of %s: %w", l.commonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.commonName, Organization: l.organizations},
		DNSNames:     l.dnsNames,
		IPAddresses:  l.ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  l.usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("issue certificate %s: %w", l.commonName, err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("encode key of %s: %w", l.commonName, err)
	}
	return keyPair{certPEM: encodeCert(der), keyPEM: keyPEM}, nil
}

func (a *authority) issueClient(user string, groups ...string) (keyPair, error) {
	return a.issue(leaf{commonName: user, organizations: groups, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func (a *authority) issueServing(commonName string, dnsNames []string, ips []net.IP) (keyPair, error) {
	return a.issue(leaf{commonName: commonName, dnsNames: dnsNames, ips: ips, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})
}

// pki is every credential of the control plane. Files live in dir.
type pki struct {
	dir string

	serverCA     *authority // signs the kube-apiserver serving certificates
	clientCA     *authority // --client-ca-file: admin and user certificates
	frontProxyCA *authority // --requestheader-client-ca-file
	convoyCA     *authority // signs the convoy-apiserver serving certificate (APIService caBundle)

	clientCAFile, frontProxyCAFile            string
	frontProxyClientCert, frontProxyClientKey string
	saPublicKeyFile, saSigningKeyFile         string
	convoyCertFile, convoyKeyFile             string

	admin keyPair // CN=admin O=system:masters
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	p := &pki{dir: dir}
	var err error
	for _, ca := range []struct {
		dst  **authority
		name string
	}{
		{&p.serverCA, "convoy-local-server-ca"},
		{&p.clientCA, "convoy-local-client-ca"},
		{&p.frontProxyCA, "convoy-local-front-proxy-ca"},
		{&p.convoyCA, "convoy-local-convoy-apiserver-ca"},
	} {
		if *ca.dst, err = newAuthority(ca.name); err != nil {
			return nil, err
		}
	}
	files := map[string][]byte{
		"server-ca.crt":      p.serverCA.certPEM,
		"client-ca.crt":      p.clientCA.certPEM,
		"front-proxy-ca.crt": p.frontProxyCA.certPEM,
		"convoy-ca.crt":      p.convoyCA.certPEM,
	}
	p.clientCAFile = filepath.Join(dir, "client-ca.crt")
	p.frontProxyCAFile = filepath.Join(dir, "front-proxy-ca.crt")

	if p.admin, err = p.clientCA.issueClient("admin", "system:masters"); err != nil {
		return nil, err
	}

	fp, err := p.frontProxyCA.issueClient(frontProxyClientName)
	if err != nil {
		return nil, err
	}
	p.frontProxyClientCert, p.frontProxyClientKey = filepath.Join(dir, "front-proxy-client.crt"), filepath.Join(dir, "front-proxy-client.key")
	files["front-proxy-client.crt"], files["front-proxy-client.key"] = fp.certPEM, fp.keyPEM

	saKey, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generate service account key: %w", err)
	}
	saKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return nil, fmt.Errorf("encode service account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encode service account public key: %w", err)
	}
	p.saSigningKeyFile, p.saPublicKeyFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	files["sa.key"] = saKeyPEM
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: saPubDER})

	svc := convoyName + "." + convoyNamespace + ".svc"
	cv, err := p.convoyCA.issueServing(svc, []string{svc, "localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	p.convoyCertFile, p.convoyKeyFile = filepath.Join(dir, "convoy-serving.crt"), filepath.Join(dir, "convoy-serving.key")
	files["convoy-serving.crt"], files["convoy-serving.key"] = cv.certPEM, cv.keyPEM

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return p, nil
}

// kubeAPIServerServing issues and writes a serving certificate for one
// kube-apiserver instance; it returns the paths of certificate and key.
func (p *pki) kubeAPIServerServing(name string) (certFile, keyFile string, err error) {
	kp, err := p.serverCA.issueServing(name,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)})
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certFile, kp.certPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, kp.keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}
