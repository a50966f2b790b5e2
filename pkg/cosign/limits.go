package cosign

// Limits of what Verify reads. A field at zero (or below) is its default.
type Limits struct {
	// MaxSignatures is how many signatures, across both layouts, are
	// considered at most; more is KindTooMany.
	MaxSignatures int
	// MaxBytes is the limit of every manifest and blob read.
	MaxBytes int64
}

// Defaults of Limits.
const (
	DefaultMaxSignatures = 16
	DefaultMaxBytes      = 1 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxSignatures <= 0 {
		l.MaxSignatures = DefaultMaxSignatures
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}
