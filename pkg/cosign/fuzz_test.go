package cosign

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzParsePayload: whatever a signature layer holds, parsing its payload
// and its signature annotation never panics, accepts only a payload of the
// cosign type naming a sha256 digest, and keeps its messages short.
func FuzzParsePayload(f *testing.F) {
	f.Add([]byte(`{"critical":{"identity":{"docker-reference":"r/x"},"image":{"docker-manifest-digest":"sha256:`+strings.Repeat("0", 64)+`"},"type":"cosign container image signature"},"optional":null}`), "MEUCIQ==")
	f.Add([]byte(`{"critical":{"image":{"docker-manifest-digest":"sha512:00"},"type":"cosign container image signature"}}`), "")
	f.Add([]byte(`{"critical":null} {}`), "!!")
	f.Add([]byte(`[]`), strings.Repeat("A", 9000))
	f.Fuzz(func(t *testing.T, payload []byte, annotation string) {
		h, err := parsePayload(payload)
		if err == nil {
			if h.Algorithm != "sha256" || len(h.Hex) != 64 {
				t.Fatalf("accepted digest %q", h)
			}
		} else if len(err.Error()) > 2*maxEcho+200 {
			t.Fatalf("message of %d bytes", len(err.Error()))
		}
		sig, err := parseSignature(annotation)
		if err == nil {
			if len(sig) == 0 || len(sig) > maxSignatureBytes {
				t.Fatalf("accepted a signature of %d bytes", len(sig))
			}
			if _, err := base64.StdEncoding.DecodeString(annotation); err != nil {
				t.Fatalf("accepted non-base64 %q", annotation)
			}
		} else if len(err.Error()) > 2*maxEcho+200 {
			t.Fatalf("message of %d bytes", len(err.Error()))
		}
	})
}

// FuzzKeylessLayer: whatever the annotations of a keyless signature layer
// hold (the certificate, the Rekor bundle, the timestamp), reading them
// never panics and keeps its messages short, and whatever it accepts has a
// certificate.
func FuzzKeylessLayer(f *testing.F) {
	f.Add("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		`{"SignedEntryTimestamp":"MEUCIQ==","Payload":{"body":"eyJhcGlWZXJzaW9uIjoiMC4wLjEiLCJraW5kIjoiaGFzaGVkcmVrb3JkIn0=","integratedTime":1,"logIndex":0,"logID":"00"}}`,
		`{"SignedRFC3161Timestamp":"MA=="}`)
	f.Add("", "{", "[]")
	f.Add("x", `{"Payload":{"body":"!!","logID":"zz"}}`, `{"SignedRFC3161Timestamp":""}`)
	f.Fuzz(func(t *testing.T, cert, rekorBundle, timestamp string) {
		s, err := parseKeylessLayer([]byte("{}"), []byte{1}, map[string]string{
			CertificateAnnotation: cert, BundleAnnotation: rekorBundle, TimestampAnnotation: timestamp,
		})
		if err != nil {
			if len(err.Error()) > 2*maxEcho+300 {
				t.Fatalf("message of %d bytes", len(err.Error()))
			}
			return
		}
		if s.cert == nil {
			t.Fatal("accepted a layer without a certificate")
		}
	})
}
