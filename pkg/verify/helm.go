package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"helm.sh/helm/v4/pkg/provenance"
	"k8s.io/klog/v2"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/gitverify"
	"github.com/kumodo/convoy-apiserver/pkg/truncate"
)

// ProviderHelm is the provider of the provenance signatures of Helm
// repository charts (helm package --sign's .prov file beside the chart).
const ProviderHelm = "helm"

// The format and the layout of a Helm provenance signature
// (SourceSignature).
const (
	FormatOpenPGP = gitverify.FormatOpenPGP
	LayoutProv    = "prov"
)

// MaxProvenanceBytes bounds a chart's provenance file, refused past it
// before it is parsed (SignatureUnverified). A .prov is the chart's
// Chart.yaml, the sha256 of the archive and a clear-signed OpenPGP
// signature (under 1 KiB armored for a 4096-bit RSA key): a few KiB;
// 64 KiB leaves Chart.yaml room for long annotations (artifacthub.io's
// change lists, image lists), as gitverify.DefaultSignatureBytes does for
// a signature block, and keeps what a tenant's repository makes the server
// hold and hash per fetch slot small. Helm itself reads it whole.
const MaxProvenanceBytes = 64 << 10

// ErrUnknownHelmProvider is the error of a helmRepository.verify whose
// provider is not helm (the CRD allows none other); the fetcher gives it
// its reason.
var ErrUnknownHelmProvider = errors.New("the provider of the provenance signatures is not helm")

// HelmChart is what VerifyHelm verifies: a chart archive of a Helm
// repository the fetcher downloaded and checked against the digest of the
// index, and how to read its provenance file.
type HelmChart struct {
	// Namespace is the Release's: verdicts are never shared across
	// namespaces.
	Namespace string
	// URL is the chart archive's URL (the index entry's, resolved): the
	// provenance file is URL + ".prov", and signs the archive by the base
	// name of URL's path, as helm install --verify checks it.
	URL string
	// Digest is the archive's sha256 digest, "sha256:HEX", as the index
	// lists it; Archive is the archive, which the fetcher checked against
	// it and serves once verified.
	Digest  string
	Archive []byte
	// Provenance reads the provenance file within MaxProvenanceBytes, with
	// the fetcher's credentials and address policy; it is called only
	// when no verdict is kept, in the verification's shared request
	// (Fetcher.Shared). A missing file, or one past the limit, is a
	// SignatureUnverified whose message names it and not the chart; any
	// other failure keeps the fetcher's reason.
	Provenance func(ctx context.Context) ([]byte, error)
	// Where names the chart in messages: repository, chart, version.
	Where string
	// Since is the time of a refresh (source.WithFreshAfter): a
	// SignatureUnverified read before it is not used. Zero: none.
	Since time.Time
}

// VerifyHelm verifies c by its provenance file with the OpenPGP public
// keys of spec's Secret (its keys ending .asc), as helm verify does: the
// signature by one of them, and the sha256 it signs for the archive's file
// name is c.Archive's. It returns the signature it verified with; the
// verdict is kept by namespace, chart URL, digest and the digest of the
// keys (a signature for Options.MaxAge, a SignatureUnverified for
// UnverifiedMaxAge unless c.Since is after it was read), never across
// namespaces or key sets. It counts the outcome
// (convoy_source_verifications_total{provider="helm"}).
func (v *Verifier) VerifyHelm(ctx context.Context, f Fetcher, c HelmChart, spec *convoyv1alpha1.HelmVerification) (*subresourcesv1alpha1.SourceSignature, error) {
	sig, err := v.verifyHelm(ctx, f, c, spec)
	countVerification(ProviderHelm, err)
	return sig, err
}

func (v *Verifier) verifyHelm(ctx context.Context, f Fetcher, c HelmChart, spec *convoyv1alpha1.HelmVerification) (*subresourcesv1alpha1.SourceSignature, error) {
	if spec.Provider != ProviderHelm {
		return nil, ErrUnknownHelmProvider
	}
	secretWhere := "verify.secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: c.Namespace, Name: spec.SecretRef.Name}.Describe()
	s, err := readSecret(ctx, f, spec.SecretRef.Name, c.Where, secretWhere)
	if err != nil {
		return nil, err
	}
	// The limits of the Secret are checked before any key is parsed.
	keys, err := gitverify.ParseKeys(s.Data, gitverify.Limits{})
	if err != nil {
		return nil, failure.Quiet(ReasonSignatureUnverified, err, "%s: %s: %s", c.Where, secretWhere, err.Error())
	}
	if len(keys.OpenPGPKeyRing()) == 0 {
		return nil, failure.New(ReasonSignatureUnverified, nil, "%s: %s holds no OpenPGP public key (armored, in a key ending %s): a Helm provenance file is signed with OpenPGP",
			c.Where, secretWhere, gitverify.SuffixOpenPGP)
	}
	key := "verify\x00" + c.Namespace + "\x00" + c.URL + "\x00" + c.Digest + "\x00" + ProviderHelm + "\x00keys\x00" + keys.Digest()
	return v.helmVerdict(ctx, f, c, key, func(ctx context.Context) (*subresourcesv1alpha1.SourceSignature, error) {
		prov, err := c.Provenance(ctx)
		if err != nil {
			return nil, err
		}
		return checkProvenance(keys, c, prov)
	})
}

// unverifiedError is a verdict of SignatureUnverified, kept without the
// chart's name: the next caller names its own.
type unverifiedError struct{ message string }

func (e *unverifiedError) Error() string { return e.message }

func unverifiedf(format string, args ...any) error {
	return &unverifiedError{message: truncate.String(fmt.Sprintf(format, args...), 1024)}
}

// helmVerdict runs check, or takes its verdict from the cache by key
// (kept): a signature for Options.MaxAge, a SignatureUnverified (check's
// *unverifiedError, or a failure of that reason of Provenance) for
// UnverifiedMaxAge unless c.Since is after it was read; any other failure
// (the repository's) is not kept.
func (v *Verifier) helmVerdict(ctx context.Context, f Fetcher, c HelmChart, key string, check func(context.Context) (*subresourcesv1alpha1.SourceSignature, error)) (*subresourcesv1alpha1.SourceSignature, error) {
	refuse := func(err error) error {
		if unverified, ok := errors.AsType[*unverifiedError](err); ok {
			return failure.Quiet(ReasonSignatureUnverified, err, "%s: %s", c.Where, unverified.message)
		}
		if ferr, ok := failure.As(err); ok && ferr.Reason == ReasonSignatureUnverified {
			// The verdict under the chart's name, its cause not a
			// failure: the condition shows this one.
			return failure.Quiet(ReasonSignatureUnverified, &unverifiedError{message: ferr.Message}, "%s: %s", c.Where, ferr.Message)
		}
		return err
	}
	got, err := v.kept(ctx, f, key, c.Since, refuse, func(ctx context.Context) (signed, error) {
		sig, err := check(ctx)
		if err != nil {
			return signed{}, err
		}
		klog.FromContext(ctx).V(4).Info("Verified a Helm chart's provenance", "chart", c.Where, "fingerprint", sig.Fingerprint, "key", sig.Key)
		return signed{sig: sig}, nil
	})
	return got.sig, err
}

// checkProvenance verifies prov, c's provenance file, with keys, with
// Helm's provenance package (Signatory.Verify: the clear-signed
// signature by a key of the ring, then the sha256 the signed message
// lists for the archive's file name against c.Archive's), and says what
// was expected and found when it does not verify (*unverifiedError).
func checkProvenance(keys *gitverify.Keys, c HelmChart, prov []byte) (*subresourcesv1alpha1.SourceSignature, error) {
	provURL := c.URL + ".prov"
	if len(prov) > MaxProvenanceBytes {
		return nil, unverifiedf("the provenance file %s is %d bytes, more than the limit of %d bytes", provURL, len(prov), MaxProvenanceBytes)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("the chart URL %s: %w", c.URL, err)
	}
	filename := path.Base(u.Path)
	block, _ := clearsign.Decode(prov)
	if block == nil {
		return nil, unverifiedf("the provenance file %s holds no OpenPGP clear-signed message (-----BEGIN PGP SIGNED MESSAGE----- and its signature): malformed", provURL)
	}
	signature, err := gitverify.ReadOpenPGPSignature(block.ArmoredSignature.Body, MaxProvenanceBytes)
	if err != nil {
		return nil, unverifiedf("the provenance file %s: its OpenPGP signature does not parse (malformed): %v", provURL, err)
	}
	issuer := gitverify.OpenPGPIssuer(signature)
	ring := keys.OpenPGPKeyRing()
	ver, err := (&provenance.Signatory{KeyRing: ring}).Verify(c.Archive, prov, filename)
	if ver == nil || ver.SignedBy == nil {
		return nil, signatureUnverified(provURL, issuer, len(ring), err)
	}
	if err != nil {
		// Signed by a trusted key, over another archive (or none).
		return nil, digestUnverified(provURL, filename, c.Digest, block.Plaintext, err)
	}
	if ver.FileHash != c.Digest {
		// The fetcher checked the archive against the digest: a bug.
		return nil, fmt.Errorf("the provenance file %s verified the archive as %s, not the digest %s it was checked against", provURL, ver.FileHash, c.Digest)
	}
	signer := keys.OpenPGPSigner(ver.SignedBy, signature)
	return &subresourcesv1alpha1.SourceSignature{
		Provider: ProviderHelm, Format: signer.Format, Key: signer.Key, Fingerprint: signer.Fingerprint,
		KeyID: signer.KeyID, Identity: signer.Identity, Layout: LayoutProv,
	}, nil
}

// signatureUnverified says why the OpenPGP signature of a provenance file,
// by issuer, did not verify with the ring of n keys (err of go-crypto).
func signatureUnverified(provURL, issuer string, n int, err error) error {
	var structural pgperrors.StructuralError
	var unsupported pgperrors.UnsupportedError
	switch {
	case err == nil:
		return fmt.Errorf("the provenance file %s: no signer and no error", provURL)
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return unverifiedf("the provenance file %s is signed by the OpenPGP key %s, which is not in the key Secret (%d OpenPGP keys): unknown key", provURL, issuer, n)
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired), errors.Is(err, pgperrors.ErrKeyRevoked):
		return unverifiedf("the provenance file %s: the OpenPGP signature by %s: %v", provURL, issuer, err)
	case errors.As(err, &structural), errors.As(err, &unsupported):
		return unverifiedf("the provenance file %s: the OpenPGP signature by %s is malformed: %v", provURL, issuer, err)
	}
	return unverifiedf("the provenance file %s: the OpenPGP signature by %s does not verify its signed message (tampered, or signed over another message): bad signature: %v",
		provURL, issuer, err)
}

// digestUnverified says why a provenance file whose signature verified
// does not verify the archive: its signed message (plaintext) lists
// another sha256 for filename than digest, none, or does not parse.
func digestUnverified(provURL, filename, digest string, plaintext []byte, err error) error {
	var sums provenance.SumCollection
	if perr := provenance.ParseMessageBlock(bytes.Clone(plaintext), nil, &sums); perr != nil {
		return unverifiedf("the provenance file %s: its signed message does not parse (Chart.yaml, ..., then the files' sha256): malformed: %v", provURL, perr)
	}
	signed, ok := sums.Files[filename]
	switch {
	case !ok:
		return unverifiedf("the provenance file %s signs no file %s, the chart archive's name (it signs %s): another archive",
			provURL, filename, strings.Join(slices.Sorted(maps.Keys(sums.Files)), ", "))
	case signed != digest:
		return unverifiedf("the provenance file %s signs %s for %s, and the chart archive is %s: it signs another archive", provURL, signed, filename, digest)
	}
	return unverifiedf("the provenance file %s does not verify the chart archive %s: %v", provURL, filename, err)
}
