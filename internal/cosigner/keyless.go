package cosigner

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	intoto "github.com/in-toto/attestation/go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The annotations of a keyless signature in the legacy layout, as cosign
// v2 writes them.
const (
	CertificateAnnotation = "dev.sigstore.cosign/certificate"
	ChainAnnotation       = "dev.sigstore.cosign/chain"
	BundleAnnotation      = "dev.sigstore.cosign/bundle"
	TimestampAnnotation   = "dev.sigstore.cosign/rfc3161timestamp"
)

// Sigstore is a Sigstore instance in memory (sigstore-go's VirtualSigstore:
// a Fulcio certificate authority, a Rekor log, a timestamping authority)
// that issues keyless signatures, as cosign makes them in CI, of any
// identity. Its trust root is valid for an hour from NewSigstore; a
// signature made in that hour verifies for as long as the caller likes
// (its log entry and timestamp date it).
type Sigstore struct {
	vs    *ca.VirtualSigstore
	roots map[RootOptions][]byte
}

// NewSigstore starts a Sigstore instance.
func NewSigstore() (*Sigstore, error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return nil, fmt.Errorf("creating the virtual Sigstore: %w", err)
	}
	return &Sigstore{vs: vs, roots: map[RootOptions][]byte{}}, nil
}

// RootOptions leave parts out of a trusted root.
type RootOptions struct {
	// NoLog leaves the Rekor log out (a root of timestamps only).
	NoLog bool
	// NoTimestamps leaves the timestamping authority out.
	NoTimestamps bool
	// CAOf, when set, puts that instance's certificate authority in place
	// of this one's (a root that knows the log and the timestamps, not the
	// certificates).
	CAOf *Sigstore
}

// TrustedRoot is the trusted_root.json of the instance, without its
// certificate transparency log (the instance's certificates carry no
// SCT), and without what opts leave out. It is the same for the same
// options.
func (s *Sigstore) TrustedRoot(opts RootOptions) ([]byte, error) {
	if data, ok := s.roots[opts]; ok {
		return data, nil
	}
	logs := map[string]*root.TransparencyLog{}
	if !opts.NoLog {
		for id, l := range s.vs.RekorLogs() {
			// The virtual instance names its log by the hex of its ID; a
			// trusted_root.json holds the ID's bytes.
			raw, err := hex.DecodeString(id)
			if err != nil {
				return nil, fmt.Errorf("the log ID %q: %w", id, err)
			}
			c := *l
			c.ID = raw
			// Valid from well before the signatures to long after.
			c.ValidityPeriodStart = time.Now().Add(-time.Hour)
			c.ValidityPeriodEnd = time.Time{}
			logs[id] = &c
		}
	}
	var tsas []root.TimestampingAuthority
	if !opts.NoTimestamps {
		tsas = s.vs.TimestampingAuthorities()
	}
	cas := s.vs.FulcioCertificateAuthorities()
	if opts.CAOf != nil {
		cas = opts.CAOf.vs.FulcioCertificateAuthorities()
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, map[string]*root.TransparencyLog{}, tsas, logs)
	if err != nil {
		return nil, fmt.Errorf("building the trusted root: %w", err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the trusted root: %w", err)
	}
	s.roots[opts] = data
	return data, nil
}

// Evidence leaves parts out of a keyless signature.
type Evidence struct {
	// NoLogEntry leaves the transparency log entry out.
	NoLogEntry bool
	// NoTimestamp leaves the signed timestamp out.
	NoTimestamp bool
}

// SignTag signs ref's digest in the legacy layout with a certificate of
// issuer and subject, as cosign v2 does in CI: the simple-signing payload,
// its signature, and the certificate, its chain, the log entry and the
// timestamp in annotations.
func (s *Sigstore) SignTag(ctx context.Context, ref name.Digest, issuer, subject string, ev Evidence, opts ...remote.Option) error {
	h, err := digestOf(ref)
	if err != nil {
		return err
	}
	payload := Payload(ref.Context(), h)
	e, err := s.vs.Sign(subject, issuer, payload)
	if err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		return err
	}
	sc, err := e.SignatureContent()
	if err != nil {
		return err
	}
	certPEM, err := certificatesPEM(vc.Certificate())
	if err != nil {
		return err
	}
	chainPEM, err := certificatesPEM(s.chain()...)
	if err != nil {
		return err
	}
	annotations := map[string]string{
		SignatureAnnotation:   base64.StdEncoding.EncodeToString(sc.Signature()),
		CertificateAnnotation: certPEM,
		ChainAnnotation:       chainPEM,
	}
	if !ev.NoLogEntry {
		tle, err := s.entry(e)
		if err != nil {
			return err
		}
		var rb struct {
			SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
			Payload              struct {
				Body           string `json:"body"`
				IntegratedTime int64  `json:"integratedTime"`
				LogIndex       int64  `json:"logIndex"`
				LogID          string `json:"logID"`
			} `json:"Payload"`
		}
		rb.SignedEntryTimestamp = tle.GetInclusionPromise().GetSignedEntryTimestamp()
		rb.Payload.Body = base64.StdEncoding.EncodeToString(tle.CanonicalizedBody)
		rb.Payload.IntegratedTime = tle.IntegratedTime
		rb.Payload.LogIndex = tle.LogIndex
		rb.Payload.LogID = hex.EncodeToString(tle.LogId.KeyId)
		data, err := json.Marshal(rb)
		if err != nil {
			return err
		}
		annotations[BundleAnnotation] = string(data)
	}
	if !ev.NoTimestamp {
		ts, err := e.Timestamps()
		if err != nil || len(ts) == 0 {
			return errors.New("the virtual Sigstore made no timestamp")
		}
		data, err := json.Marshal(map[string][]byte{"SignedRFC3161Timestamp": ts[0]})
		if err != nil {
			return err
		}
		annotations[TimestampAnnotation] = string(data)
	}
	return AttachTagAnnotated(ctx, ref, payload, annotations, opts...)
}

// SignReferrer signs ref's digest as cosign v3 does in CI: a Sigstore
// bundle v0.3 of a DSSE envelope (the statement of SignPredicateType), its
// certificate, its log entry (with an inclusion proof) and its timestamp,
// attached to ref as an OCI referrer.
func (s *Sigstore) SignReferrer(ctx context.Context, ref name.Digest, issuer, subject string, ev Evidence, opts ...remote.Option) error {
	data, err := s.Bundle(ref, issuer, subject, ev)
	if err != nil {
		return err
	}
	return AttachReferrer(ctx, ref, data, opts...)
}

// Bundle is the JSON of SignReferrer's bundle.
func (s *Sigstore) Bundle(ref name.Digest, issuer, subject string, ev Evidence) ([]byte, error) {
	h, err := digestOf(ref)
	if err != nil {
		return nil, err
	}
	statement, err := protojson.Marshal(&intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{{Name: ref.Context().Name(), Digest: map[string]string{h.Algorithm: h.Hex}}},
		PredicateType: SignPredicateType,
		Predicate:     &structpb.Struct{},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the statement: %w", err)
	}
	e, err := s.vs.AttestAtTime(subject, issuer, statement, time.Now().Add(time.Minute), true)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		return nil, err
	}
	sc, err := e.SignatureContent()
	if err != nil {
		return nil, err
	}
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, err
	}
	pe := &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType}
	for _, sig := range env.Signatures {
		raw, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err != nil {
			return nil, err
		}
		pe.Signatures = append(pe.Signatures, &protodsse.Signature{Sig: raw, Keyid: sig.KeyID})
	}
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
	}
	if !ev.NoLogEntry {
		tle, err := s.entry(e)
		if err != nil {
			return nil, err
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{tle}
	}
	if !ev.NoTimestamp {
		ts, err := e.Timestamps()
		if err != nil || len(ts) == 0 {
			return nil, errors.New("the virtual Sigstore made no timestamp")
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts[0]}},
		}
	}
	pb := &protobundle.Bundle{
		MediaType:            BundleMediaType,
		VerificationMaterial: vm,
		Content:              &protobundle.Bundle_DsseEnvelope{DsseEnvelope: pe},
	}
	return protojson.Marshal(pb)
}

// entry is the log entry of e as a bundle holds it: its kind and version
// (read from its body), and its signed entry timestamp as its inclusion
// promise (signed again by the instance's log key: the virtual instance
// keeps its own to itself).
func (s *Sigstore) entry(e *ca.TestEntity) (*protorekor.TransparencyLogEntry, error) {
	entries, err := e.TlogEntries()
	if err != nil || len(entries) == 0 {
		return nil, errors.New("the virtual Sigstore made no log entry")
	}
	tle := proto.Clone(entries[0].TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
	var kv struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(tle.CanonicalizedBody, &kv); err != nil {
		return nil, fmt.Errorf("reading the log entry's body: %w", err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
		IntegratedTime: tle.IntegratedTime,
		LogIndex:       tle.LogIndex,
		LogID:          hex.EncodeToString(tle.LogId.KeyId),
	})
	if err != nil {
		return nil, fmt.Errorf("signing the entry timestamp: %w", err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle, nil
}

// chain is the instance's intermediate and root certificates.
func (s *Sigstore) chain() []*x509.Certificate {
	var out []*x509.Certificate
	for _, a := range s.vs.FulcioCertificateAuthorities() {
		if f, ok := a.(*root.FulcioCertificateAuthority); ok {
			out = append(out, f.Intermediates...)
			out = append(out, f.Root)
		}
	}
	return out
}

func certificatesPEM(certs ...*x509.Certificate) (string, error) {
	var out []byte
	for _, c := range certs {
		if c == nil {
			return "", errors.New("no certificate")
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return string(out), nil
}
