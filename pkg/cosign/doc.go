// Package cosign verifies cosign signatures of an OCI artifact, already
// resolved to a digest, with PEM public keys (a Secret's *.pub entries) or
// keyless: Verify tells which trusted key signed exactly that digest,
// VerifyKeyless which certificate of a Sigstore trust root (TrustRoot, a
// trusted_root.json) and of an expected OIDC identity did (Keyless), or
// why none did, as an *Error of a Kind.
//
// It reads both layouts cosign writes to the artifact's repository:
//
//   - the legacy tag sha256-<hex>.sig: an image manifest whose layers of
//     type application/vnd.dev.cosign.simplesigning.v1+json each hold a
//     simple-signing payload, its signature (base64) in the layer annotation
//     dev.cosignproject.cosign/signature. The signature is verified over the
//     payload's bytes, then the payload must name the artifact's digest
//     (critical.image.docker-manifest-digest) and be of the type "cosign
//     container image signature";
//   - Sigstore bundles (v0.1 to v0.3) attached as OCI referrers, as cosign
//     v3 writes them, listed by the referrers API or, on a registry without
//     it, the sha256-<hex> tag of the referrers tag schema: a manifest of a
//     bundle artifactType and one layer, the bundle's JSON. A DSSE envelope
//     must carry an in-toto statement of cosign's signature predicate
//     (https://sigstore.dev/cosign/sign/v1; other predicates are
//     attestations, not signatures) whose subject is the artifact's digest;
//     a message signature must sign that digest.
//
// The cryptography and the bundle format are sigstore-go's: each signature
// goes through its verifier with the keys as trusted material, key-only
// (verify.WithKey), without observer timestamps; or, keyless, with the
// trust root as trusted material: the certificate's chain to one of its
// certificate authorities at the time a log entry or a signed timestamp
// establishes (as the root requires: NewTrustRoot), then the certificate's
// issuer and subject matched here against the identities, anchored
// expressions, so that a message names what was expected and found. A
// keyless signature in the tag layout carries its certificate and its
// evidence in layer annotations (CertificateAnnotation, BundleAnnotation,
// TimestampAnnotation).
//
// What it does not verify: with keys, transparency log entries and signed
// timestamps (a bundle's are ignored, neither required nor checked);
// keyless, a certificate chain a signature carries (the trust root's
// authorities are the chain) and any extension of the certificate but its
// issuer and subject (the workflow's repository, ref, trigger); key
// validity periods, the payload's
// docker-reference and optional annotations, and any signature of another
// artifact (an index's children, attestations). It never resolves a tag of
// the artifact itself: the caller gives the digest.
//
// Everything the registry sends is bounded: at most Limits.MaxSignatures
// signatures are considered across both layouts (counted from the
// listings, before any of them is read), and every manifest, referrers
// index and blob is refused past Limits.MaxBytes, by its descriptor's size
// or its Content-Length before it is read, and while it is read. The
// registry client (go-containerregistry) reads a manifest whole before its
// caller sees it, so the bound of manifests and indexes is Transport's, the
// transport the Puller given to Verify must read through.
package cosign
