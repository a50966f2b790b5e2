package receiverindex

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

// Entry is what the listener needs of a Ready Receiver, held in memory so
// that a delivery costs no read of the cluster before its signature is
// checked: who it is, how its deliveries are signed, its shared secret and
// which Releases it may refresh.
type Entry struct {
	// Namespace, Name and UID are the Receiver's.
	Namespace, Name string
	UID             types.UID
	// Generation is the Receiver's metadata.generation the entry is of.
	Generation int64
	// Type is the sender (spec.type).
	Type webhook.Type
	// Events, when not empty, are the only events that refresh (spec.events).
	Events []string
	// Releases selects the Releases of Namespace a delivery may refresh
	// (spec.releases).
	Releases labels.Selector
	// Token is the shared secret: key "token" of spec.secretRef, read as
	// the Receiver's ServiceAccount. Never logged.
	Token []byte
	// Path is status.webhookPath: "/hook/" and 64 hex digits.
	Path string
}

// Lookup is how the listener finds the Receiver of a path: an in-memory
// map, no I/O. ok is false for a path of no Ready Receiver.
type Lookup interface {
	Lookup(path string) (Entry, bool)
}
