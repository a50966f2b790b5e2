package verify

import (
	"context"
	"errors"
	"time"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/agecache"
	"github.com/kumodo/convoy-apiserver/pkg/cosign"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// cosignKinds are the cosign failures that are SignatureUnverified; any
// other (the registry) keeps the registry's reason. A signature manifest
// or a referrers index past its limit (KindTooLarge) is one: what the
// registry holds has no signature that can be verified, as with too many
// signatures; --max-artifact-bytes, the artifact's limit, has no say.
var cosignKinds = map[cosign.Kind]bool{
	cosign.KindNoSignature: true, cosign.KindWrongKey: true, cosign.KindOtherDigest: true, cosign.KindTooMany: true, cosign.KindInvalid: true,
	cosign.KindWrongIdentity: true, cosign.KindUntrusted: true, cosign.KindTooLarge: true,
}

// verdict runs check, or takes its verdict from the cache: kept by
// namespace, origin, digest, provider and policy (the digest of the keys,
// or of the trust root and identities), never across namespaces or trust
// material (kept). A transient failure (the registry's) is not kept.
func (v *Verifier) verdict(ctx context.Context, f Fetcher, a Artifact, policy string, check func(context.Context) (*cosign.Signer, error)) (*subresourcesv1alpha1.SourceSignature, error) {
	key := "verify\x00" + a.Namespace + "\x00" + a.Ref.Context().String() + "\x00" + a.Ref.DigestStr() + "\x00" + ProviderCosign + "\x00" + policy
	refuse := func(err error) error { return cosignFailure(f, a.Where, err) }
	got, err := v.kept(ctx, f, key, a.Since, refuse, func(ctx context.Context) (signed, error) {
		signer, err := check(ctx)
		if err != nil {
			return signed{}, err
		}
		return signed{sig: &subresourcesv1alpha1.SourceSignature{
			Provider: ProviderCosign, Key: signer.Key, Fingerprint: signer.Fingerprint,
			Issuer: signer.Issuer, Subject: signer.Subject, Layout: signer.Layout,
		}}, nil
	})
	return got.sig, err
}

// signed is a verdict that verified: the signature, and for a Git source
// whose verify mode is TagAndHEAD its annotated tag's (tag).
type signed struct {
	sig, tag *subresourcesv1alpha1.SourceSignature
}

// kept runs check, or takes its verdict from the cache by key (which
// names the namespace, the artifact, the provider and the policy): a
// signature for Options.MaxAge, a SignatureUnverified for
// UnverifiedMaxAge unless since is after it was read. refuse makes a
// failure of check (or a kept one) the caller's *failure.Error; only the
// SignatureUnverified ones are kept, as check's error (the verdict, not
// its message: the next caller names its own source).
func (v *Verifier) kept(ctx context.Context, f Fetcher, key string, since time.Time, refuse func(error) error, check func(context.Context) (signed, error)) (signed, error) {
	sig, ok := v.getSignature(key)
	var refused error
	if !ok {
		refused = v.getUnverified(key, since)
	}
	if v.countLookup(ok || refused != nil) {
		if refused != nil {
			return signed{}, refuse(refused)
		}
		return sig, nil
	}
	got, err := f.Shared(ctx, key, func(ctx context.Context) (any, error) {
		if sig, ok := v.getSignature(key); ok {
			return sig, nil
		}
		if refused := v.getUnverified(key, since); refused != nil {
			return nil, refuse(refused)
		}
		sig, err := check(ctx)
		if err != nil {
			ferr := refuse(err)
			if failure.ReasonOf(ferr) == ReasonSignatureUnverified {
				v.putUnverified(key, err)
			}
			return nil, ferr
		}
		v.putSignature(key, sig)
		return sig, nil
	})
	if err != nil {
		return signed{}, err
	}
	return got.(signed), nil
}

// cosignFailure is err of cosign.Verify as a *failure.Error:
// SignatureUnverified, or the registry's own failure (f's).
func cosignFailure(f Fetcher, where string, err error) error {
	e, ok := errors.AsType[*cosign.Error](err)
	switch {
	case !ok:
		return failure.New(failure.ReasonInternalError, err, "%s: verifying the signatures", where)
	case cosignKinds[e.Kind]:
		return failure.Quiet(ReasonSignatureUnverified, err, "%s: %s", where, e.Message)
	}
	return f.RegistryFailure(where+": reading the signatures", e.Err)
}

// countLookup counts a lookup of the verdict cache, when verdicts are
// kept: a hit is a verdict kept, a signature or a SignatureUnverified. It
// returns hit.
func (v *Verifier) countLookup(hit bool) bool {
	if v.signatures != nil {
		agecache.CountLookup(agecache.CacheSignature, hit)
	}
	return hit
}

// The verdict cache: each getter misses and each setter does nothing when
// no verdict is kept (Options.MaxAge zero).

// getSignature is the signature an artifact was verified with for key,
// within Options.MaxAge.
func (v *Verifier) getSignature(key string) (signed, bool) {
	if v.signatures == nil {
		return signed{}, false
	}
	return v.signatures.Get(key)
}

func (v *Verifier) putSignature(key string, sig signed) {
	if v.signatures != nil {
		v.signatures.Put(key, sig)
	}
}

// getUnverified is the error of the check (cosign's, gitverify's) of a verification that was
// SignatureUnverified for key, within UnverifiedMaxAge, read at since or
// later; nil: none.
func (v *Verifier) getUnverified(key string, since time.Time) error {
	if v.unverified == nil {
		return nil
	}
	err, _ := v.unverified.GetSince(key, since)
	return err
}

func (v *Verifier) putUnverified(key string, err error) {
	if v.unverified != nil {
		v.unverified.Put(key, err)
	}
}
