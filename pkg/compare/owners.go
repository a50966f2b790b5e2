package compare

import (
	"bytes"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/describe"
)

// unknownManager stands in ObjectDiff.ChangedBy for changes without owner.
const unknownManager = "unknown"

// managedSet is the fields one entry of managedFields owns, as paths.
type managedSet struct {
	owner  subresourcesv1alpha1.FieldOwner
	convoy bool
	paths  []fieldpath.Path
}

// fieldOwners tells who owns the fields of one live object.
type fieldOwners struct {
	live any
	sets []managedSet
}

// ownersOf parses the managedFields of a live object. An entry that is not
// FieldsV1 or does not parse is skipped: it owns nothing that can be
// told.
func ownersOf(live map[string]any, entries []metav1.ManagedFieldsEntry) *fieldOwners {
	o := &fieldOwners{live: live}
	for _, e := range entries {
		if e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue
		}
		ms := managedSet{
			owner:  subresourcesv1alpha1.FieldOwner{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Time: e.Time},
			convoy: e.Manager == convoyv1alpha1.FieldManagerController || e.Manager == convoyv1alpha1.FieldManagerObserver,
		}
		for p := range set.All() {
			ms.paths = append(ms.paths, p.Copy())
		}
		o.sets = append(o.sets, ms)
	}
	return o
}

// relation is how a path of a managed set relates to a changed field.
type relation uint8

const (
	unrelated relation = iota
	above              // the path is an ancestor of the field
	same               // the path is the field, or below it
)

// attribute sets Owners or Unattributed of a change (see
// subresourcesv1alpha1.Unattributed for why): the managers that own
// the field or what it holds; else those of its closest owned ancestor
// (a change inside an atomic field, or a list item). convoy's own managers
// are never named: a field only they own has changed behind managedFields'
// back.
func (o *fieldOwners) attribute(c *change) {
	if c.Op == subresourcesv1alpha1.ChangeAdd {
		c.Unattributed = subresourcesv1alpha1.UnattributedRemoved
		return
	}
	var owners []int
	deepest := -1
	var ancestors []int
	for i := range o.sets {
		best, depth := unrelated, -1
		for _, p := range o.sets[i].paths {
			switch r := relate(p, c.segs, o.live); r {
			case same:
				best = same
			case above:
				if best != same && len(p) > depth {
					best, depth = above, len(p)
				}
			}
			if best == same {
				break
			}
		}
		switch {
		case best == same:
			owners = append(owners, i)
		case best == above && depth > deepest:
			deepest, ancestors = depth, []int{i}
		case best == above && depth == deepest:
			ancestors = append(ancestors, i)
		}
	}
	if len(owners) == 0 {
		owners = ancestors
	}
	for _, i := range owners {
		if !o.sets[i].convoy {
			c.Owners = append(c.Owners, o.sets[i].owner)
		}
	}
	switch {
	case len(owners) == 0:
		c.Unattributed = subresourcesv1alpha1.UnattributedUnowned
	case len(c.Owners) == 0:
		c.Unattributed = subresourcesv1alpha1.UnattributedNoManager
	}
}

// relate tells how p relates to the field at segs of live, matching list
// items by what they hold in live: an item's keys (k:), its value (v:) or
// its index (i:).
func relate(p fieldpath.Path, segs []segment, live any) relation {
	node := live
	n := min(len(p), len(segs))
	for i := 0; i < n; i++ {
		var ok bool
		if node, ok = descend(p[i], segs[i], node); !ok {
			return unrelated
		}
	}
	if len(p) < len(segs) {
		return above
	}
	return same
}

// descend matches pe against seg at node and returns the node below.
func descend(pe fieldpath.PathElement, seg segment, node any) (any, bool) {
	switch seg.kind {
	case segKey:
		if pe.FieldName == nil || *pe.FieldName != seg.key {
			return nil, false
		}
		m, _ := node.(map[string]any)
		return m[seg.key], true
	case segIndex:
		list, _ := node.([]any)
		if seg.index < 0 || seg.index >= len(list) {
			return nil, false
		}
		if pe.Index != nil {
			return list[seg.index], *pe.Index == seg.index
		}
		return list[seg.index], holds(pe, list[seg.index])
	case segMatch:
		list, _ := node.([]any)
		for _, item := range list {
			if m, ok := item.(map[string]any); ok && scalarEqual(m[seg.key], seg.value) {
				return item, holds(pe, item)
			}
		}
	}
	return nil, false
}

// holds reports whether the list item pe names is item: its keys all have
// their values in item (k:), or it is item's value (v:).
func holds(pe fieldpath.PathElement, item any) bool {
	switch {
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok || len(*pe.Key) == 0 {
			return false
		}
		for _, f := range *pe.Key {
			if !scalarEqual(m[f.Name], f.Value.Unstructured()) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return scalarEqual((*pe.Value).Unstructured(), item)
	}
	return false
}

// changedBy lists the distinct owners of changes, in their order, and
// unknownManager for changes without one.
func changedBy(changes []subresourcesv1alpha1.FieldChange) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range changes {
		if len(c.Owners) == 0 {
			add(unknownManager)
		}
		for _, o := range c.Owners {
			add(OwnerLabel(o))
		}
	}
	return out
}

// changedByMessage says who made changes, for the InSync message: each
// distinct owner with the time its entry records (stable from pass to
// pass, unlike "40s ago"), or that no manager recorded some of them.
func changedByMessage(changes []subresourcesv1alpha1.FieldChange) string {
	var parts []string
	seen := map[string]bool{}
	unknown := false
	for _, c := range changes {
		unknown = unknown || len(c.Owners) == 0
		for _, o := range c.Owners {
			label := OwnerLabel(o)
			if seen[label] {
				continue
			}
			seen[label] = true
			if o.Time != nil {
				label += " at " + o.Time.UTC().Format(time.RFC3339)
			} else {
				label += " at an unknown time"
			}
			parts = append(parts, label)
		}
	}
	switch {
	case len(parts) == 0:
		return "no other manager than convoy's recorded these changes"
	case unknown:
		parts = append(parts, "and no other manager than convoy's for the others")
	}
	return "changed by " + strings.Join(parts, ", ")
}

// appliedAt is the time of the managedFields entry of convoy's controller
// (its apply of the object itself), nil when there is none.
func appliedAt(entries []metav1.ManagedFieldsEntry) *metav1.Time {
	for _, e := range entries {
		if e.Manager == convoyv1alpha1.FieldManagerController && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return e.Time
		}
	}
	return nil
}

// OwnerLabel names an owner as people read it: "manager", or "manager
// (subresource)".
func OwnerLabel(o subresourcesv1alpha1.FieldOwner) string {
	return describe.Manager(o.Manager, o.Subresource)
}
