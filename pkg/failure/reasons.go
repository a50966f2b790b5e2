package failure

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Class is what kind of failure a reason names. The REST storage maps a
// class to an HTTP status and the drift check to the InSync outcome, so
// that a package adds a reason by declaring it, and no other package names
// it.
type Class string

// Classes of reasons.
const (
	// ClassInvalid: the Release, or what it names (its source's files, a
	// chart, values, a rule, a Cluster's kubeconfig), is not valid input;
	// it fails the same way until someone changes it.
	ClassInvalid Class = "Invalid"
	// ClassNotFound: something the Release names does not exist (a
	// ConfigMap, an artifact, a Cluster, a kind, a stored render).
	ClassNotFound Class = "NotFound"
	// ClassForbidden: an identity was refused: the Release's own, the
	// credentials it names, or the address policy.
	ClassForbidden Class = "Forbidden"
	// ClassOverLimit: a limit of convoy-apiserver (a flag) was reached: the
	// input is too large or takes too long.
	ClassOverLimit Class = "OverLimit"
	// ClassUnavailable: something convoy-apiserver depends on failed just
	// now (the network, a cluster's or a registry's server); it may pass
	// on a retry.
	ClassUnavailable Class = "Unavailable"
	// ClassInternal: a bug of convoy-apiserver.
	ClassInternal Class = "Internal"
	// ClassOutcome: not a failure but the result of a check (InSync,
	// Drifted, Healthy, ...), or an Event.
	ClassOutcome Class = "Outcome"
)

// Where says what shows a reason.
type Where string

// Places a reason shows in.
const (
	// InSync: the InSync condition of the Release (Undetermined, the
	// reason first in its message) and the result of /diff.
	InSync Where = "InSync"
	// Healthy: the Healthy condition (CannotAssess, the reason's message
	// in its message) and the per-object states of the ReleaseInventory.
	Healthy Where = "Healthy"
	// Response: the answer of a subresource (/preview's status, /diff's
	// result).
	Response Where = "Response"
	// Event: an Event of the Release.
	Event Where = "Event"
	// Receiver: the Ready condition of a Receiver.
	Receiver Where = "Receiver"
)

// Reason is a reason declared with Declare: its name, its class, where it
// shows, and what an operator does about it.
type Reason struct {
	// Name is one word, CamelCase, as conditions and Statuses carry it.
	Name string
	// Class is the kind of failure.
	Class Class
	// Shows lists where the reason shows.
	Shows []Where
	// Refusal says that convoy-apiserver itself refused the input (a
	// policy, a limit, an input it will not read), rather than something
	// it depends on failing: counted by the refusal metrics.
	Refusal bool
	// Means says what happened.
	Means string
	// Action says what an operator or the Release's author should do.
	Action string
	// Package is the import path of the package that declared it, which
	// Declare records.
	Package string
}

var registry = struct {
	sync.RWMutex
	reasons map[string]Reason
}{reasons: map[string]Reason{}}

// Declare registers r and returns its name, so that a package declares each
// of its reasons once:
//
//	var ReasonSourceNotFound = failure.Declare(failure.Reason{Name: "SourceNotFound", Class: failure.ClassNotFound, ...})
//
// It panics when the name is empty or already declared, or the class is
// unknown: a programming error found by any test of the package.
func Declare(r Reason) string {
	if r.Name == "" || r.Means == "" || r.Action == "" || len(r.Shows) == 0 {
		panic(fmt.Sprintf("failure.Declare: reason %q needs a name, what it means, an action and where it shows", r.Name))
	}
	switch r.Class {
	case ClassInvalid, ClassNotFound, ClassForbidden, ClassOverLimit, ClassUnavailable, ClassInternal, ClassOutcome:
	default:
		panic(fmt.Sprintf("failure.Declare: reason %s has an unknown class %q", r.Name, r.Class))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.reasons[r.Name]; ok {
		panic(fmt.Sprintf("failure.Declare: reason %s is declared twice", r.Name))
	}
	r.Shows = append([]Where(nil), r.Shows...)
	r.Package = callerPackage()
	registry.reasons[r.Name] = r
	return r.Name
}

// Lookup returns the declared reason named name.
func Lookup(name string) (Reason, bool) {
	registry.RLock()
	defer registry.RUnlock()
	r, ok := registry.reasons[name]
	return r, ok
}

// ClassOf returns the class of the reason named name; a reason that was
// not declared is ClassInternal (a bug: every reason is declared).
func ClassOf(name string) Class {
	if r, ok := Lookup(name); ok {
		return r.Class
	}
	return ClassInternal
}

// IsRefusal reports whether the reason named name is a refusal of
// convoy-apiserver (Reason.Refusal).
func IsRefusal(name string) bool {
	r, ok := Lookup(name)
	return ok && r.Refusal
}

// Reasons returns every declared reason, by name: those of the packages the
// program links.
func Reasons() []Reason {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Reason, 0, len(registry.reasons))
	for _, r := range registry.reasons {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InSyncAndResponse is where most reasons show: the InSync condition and
// the answers of the subresources.
var InSyncAndResponse = []Where{InSync, Response}

// Reasons that several steps share.
var (
	ReasonForbidden = Declare(Reason{
		Name: "Forbidden", Class: ClassForbidden, Shows: []Where{InSync, Healthy, Response},
		Means:  "the identity the Release acts as (or a Cluster's kubeconfig) may not do what a step needs: read an input, the Secret of a Cluster or an object, or dry-run it; the message names the identity, the verb and the object",
		Action: "grant that identity the right the message names (a Role bound to the Release's ServiceAccount), or change the Release so that it does not need it",
	})
	ReasonInternalError = Declare(Reason{
		Name: "InternalError", Class: ClassInternal, Shows: []Where{InSync, Healthy, Response},
		Means:  "a step panicked: a bug of convoy-apiserver; the stack is in its log",
		Action: "report it with the log line \"Recovered from a panic\"; the other Releases are not affected",
	})
	// ReasonLinkUnsupported is given by pkg/source (a link under the
	// rendered directory, or in a chart) and pkg/kustomize (a kustomization
	// that names a link elsewhere in the source).
	ReasonLinkUnsupported = Declare(Reason{
		Name: "LinkUnsupported", Class: ClassInvalid, Shows: []Where{InSync, Response}, Refusal: true,
		Means: "the source holds a link where the render would read it: a symbolic or hard link under the rendered directory (a Git commit, a bundle) or in a chart archive, " +
			"a submodule under a Git source's path, or a link elsewhere that a kustomization names; a link is never followed, nor dropped in silence (the directories docs say why)",
		Action: "replace the link by the file or directory it points to (vendor a submodule's files); the message names the link",
	})
	ReasonClusterUnreachable = Declare(Reason{
		Name: "ClusterUnreachable", Class: ClassUnavailable, Shows: []Where{InSync, Healthy, Response},
		Means:  "the network failed or timed out, or the target cluster's API server answered 5xx or 429, for the render's reads and the compare's alike",
		Action: "check the cluster's API server and the network between it and convoy-apiserver; the next pass tries again",
	})
)

// callerPackage is the import path of the package of Declare's caller: a
// package-level variable's initializer, whose function is PKG.init.
func callerPackage() string {
	pc, _, _, ok := runtime.Caller(2)
	if !ok {
		return ""
	}
	name := runtime.FuncForPC(pc).Name() // PKG.init or PKG.Func...
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}
