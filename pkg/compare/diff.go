package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// listKeys are the keys that identify the elements of a list of maps, in
// order of preference: the first key that every element on both sides has,
// with a scalar value unique on each side, matches the elements.
var listKeys = []string{"name", "key", "type", "containerPort", "mountPath", "devicePath", "ip", "port"}

// smallList is the length up to which list elements are matched by a
// linear scan instead of an index map.
const smallList = 16

// segKind is the kind of one step of a path.
type segKind uint8

const (
	segKey   segKind = iota // a map key: .key or ["k.e.y"]
	segIndex                // a list index: [2]
	segMatch                // a list element matched by key: [name=app]
)

// segment is one step of a path.
type segment struct {
	kind  segKind
	key   string // segKey: the map key; segMatch: the list key
	index int    // segIndex
	value any    // segMatch: the scalar value of the list key
}

// change is a field change with the path it was found at, kept as segments
// so that changes sort by structure (index 2 before index 10).
type change struct {
	segs []segment
	subresourcesv1alpha1.FieldChange
}

// differ walks a desired and a live object side by side.
type differ struct {
	path    []segment
	changes []change
}

// diffObjects returns the field changes from live to desired, sorted by path.
// Neither input is modified.
func diffObjects(desired, live map[string]any) []subresourcesv1alpha1.FieldChange {
	return fieldChanges(diffChanges(desired, live))
}

// diffChanges returns the changes from live to desired with their paths as
// segments, sorted by path.
func diffChanges(desired, live map[string]any) []change {
	d := differ{path: make([]segment, 0, 16)}
	d.maps(desired, live)
	slices.SortFunc(d.changes, func(a, b change) int { return compareSegments(a.segs, b.segs) })
	return d.changes
}

// fieldChanges are the FieldChanges of changes; nil for none.
func fieldChanges(changes []change) []subresourcesv1alpha1.FieldChange {
	if len(changes) == 0 {
		return nil
	}
	out := make([]subresourcesv1alpha1.FieldChange, len(changes))
	for i := range changes {
		out[i] = changes[i].FieldChange
	}
	return out
}

func (d *differ) push(s segment) { d.path = append(d.path, s) }
func (d *differ) pop()           { d.path = d.path[:len(d.path)-1] }

// emit records a change at the current path. A nil side is absent (the
// value itself may be JSON null: hasDesired and hasLive tell them apart).
func (d *differ) emit(op subresourcesv1alpha1.ChangeOp, desired any, hasDesired bool, live any, hasLive bool) {
	c := change{segs: slices.Clone(d.path)}
	c.Path = renderPath(c.segs)
	c.Op = op
	if hasDesired {
		c.Desired = rawJSON(desired)
	}
	if hasLive {
		c.Live = rawJSON(live)
	}
	d.changes = append(d.changes, c)
}

// value compares two values at the current path.
func (d *differ) value(desired, live any) {
	switch dv := desired.(type) {
	case map[string]any:
		if lv, ok := live.(map[string]any); ok {
			d.maps(dv, lv)
			return
		}
	case []any:
		if lv, ok := live.([]any); ok {
			d.lists(dv, lv)
			return
		}
	}
	if !scalarEqual(desired, live) {
		d.emit(subresourcesv1alpha1.ChangeReplace, desired, true, live, true)
	}
}

// maps compares two maps key by key.
func (d *differ) maps(desired, live map[string]any) {
	for k, dv := range desired {
		d.push(segment{kind: segKey, key: k})
		if lv, ok := live[k]; ok {
			d.value(dv, lv)
		} else {
			d.emit(subresourcesv1alpha1.ChangeAdd, dv, true, nil, false)
		}
		d.pop()
	}
	for k, lv := range live {
		if _, ok := desired[k]; !ok {
			d.push(segment{kind: segKey, key: k})
			d.emit(subresourcesv1alpha1.ChangeRemove, nil, false, lv, true)
			d.pop()
		}
	}
}

// lists compares two lists: by a key of their elements when they have one,
// else index by index when they have the same length, else as a whole.
func (d *differ) lists(desired, live []any) {
	if key := listKey(desired, live); key != "" {
		d.keyedLists(key, desired, live)
		return
	}
	if len(desired) == len(live) {
		for i := range desired {
			d.push(segment{kind: segIndex, index: i})
			d.value(desired[i], live[i])
			d.pop()
		}
		return
	}
	d.emit(subresourcesv1alpha1.ChangeReplace, desired, true, live, true)
}

// keyedLists compares two lists of maps whose elements are identified by
// key: an element on both sides is compared field by field, an element on
// one side only is an add or a remove.
func (d *differ) keyedLists(key string, desired, live []any) {
	// The common case: the same elements in the same order.
	aligned := len(desired) == len(live)
	for i := 0; aligned && i < len(desired); i++ {
		aligned = scalarEqual(desired[i].(map[string]any)[key], live[i].(map[string]any)[key])
	}
	if aligned {
		for i := range desired {
			d.push(segment{kind: segMatch, key: key, value: desired[i].(map[string]any)[key]})
			d.value(desired[i], live[i])
			d.pop()
		}
		return
	}
	find := finder(key, live)
	matched := make([]bool, len(live))
	for _, de := range desired {
		v := de.(map[string]any)[key]
		d.push(segment{kind: segMatch, key: key, value: v})
		if j := find(v); j >= 0 {
			matched[j] = true
			d.value(de, live[j])
		} else {
			d.emit(subresourcesv1alpha1.ChangeAdd, de, true, nil, false)
		}
		d.pop()
	}
	for j, le := range live {
		if !matched[j] {
			d.push(segment{kind: segMatch, key: key, value: le.(map[string]any)[key]})
			d.emit(subresourcesv1alpha1.ChangeRemove, nil, false, le, true)
			d.pop()
		}
	}
}

// finder returns a function that gives the index of the element of list
// whose key has value v, or -1.
func finder(key string, list []any) func(v any) int {
	if len(list) <= smallList {
		return func(v any) int {
			for j, e := range list {
				if scalarEqual(e.(map[string]any)[key], v) {
					return j
				}
			}
			return -1
		}
	}
	index := make(map[any]int, len(list))
	for j, e := range list {
		index[canonicalScalar(e.(map[string]any)[key])] = j
	}
	return func(v any) int {
		if j, ok := index[canonicalScalar(v)]; ok {
			return j
		}
		return -1
	}
}

// listKey returns the first of listKeys that identifies the elements of both
// lists, or "" when none does (or both lists are empty).
func listKey(desired, live []any) string {
	if len(desired) == 0 && len(live) == 0 {
		return ""
	}
	for _, k := range listKeys {
		if isListKey(k, desired) && isListKey(k, live) {
			return k
		}
	}
	return ""
}

// isListKey reports whether every element of list is a map with a scalar
// value at key, unique in the list.
func isListKey(key string, list []any) bool {
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || !isScalar(m[key]) {
			return false
		}
	}
	if len(list) <= smallList {
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				if scalarEqual(list[i].(map[string]any)[key], list[j].(map[string]any)[key]) {
					return false
				}
			}
		}
		return true
	}
	seen := make(map[any]struct{}, len(list))
	for _, e := range list {
		v := canonicalScalar(e.(map[string]any)[key])
		if _, dup := seen[v]; dup {
			return false
		}
		seen[v] = struct{}{}
	}
	return true
}

// isScalar reports whether v is a string, number or bool (not null).
func isScalar(v any) bool {
	switch v.(type) {
	case string, bool:
		return true
	}
	_, ok := number(v)
	return ok
}

// number returns v as a float64 when it is a number of any Go type the
// JSON decoders produce (or a test writes).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// integer returns v as an int64 when it is an integer of an integer type.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	}
	return 0, false
}

// scalarEqual reports whether two values are equal; numbers compare by
// value whatever their Go type (int64 2 equals float64 2). Maps and lists
// compare deeply.
func scalarEqual(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !scalarEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !scalarEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	if ai, ok := integer(a); ok {
		if bi, ok := integer(b); ok {
			return ai == bi
		}
	}
	af, aok := number(a)
	bf, bok := number(b)
	return aok && bok && af == bf
}

// canonicalScalar returns a comparable form of a scalar, equal for values
// that scalarEqual finds equal.
func canonicalScalar(v any) any {
	if i, ok := integer(v); ok {
		return i
	}
	if f, ok := number(v); ok {
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f)
		}
		return f
	}
	return v
}

// rawJSON returns v as JSON. Values of unstructured objects always marshal;
// anything else is shown as a JSON string rather than lost.
func rawJSON(v any) *runtime.RawExtension {
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(fmt.Sprint(v))
	}
	return &runtime.RawExtension{Raw: raw}
}

// renderPath renders a path a person can read:
// spec.template.spec.containers[name=app].image, metadata.annotations["example.com/x"], spec.args[2].
func renderPath(segs []segment) string {
	var b strings.Builder
	for i, s := range segs {
		switch s.kind {
		case segKey:
			if plainKey(s.key) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s.key)
			} else {
				b.WriteByte('[')
				b.WriteString(strconv.Quote(s.key))
				b.WriteByte(']')
			}
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case segMatch:
			b.WriteByte('[')
			b.WriteString(s.key)
			b.WriteByte('=')
			b.WriteString(matchValue(s.value))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// plainKey reports whether a map key can be written without quotes: letters,
// digits, '_' and '-' only.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// matchValue renders the value of a list key: bare when it is a number, a
// bool, or a string of safe characters (so /var/run and 10.0.0.1 stay
// readable), quoted otherwise.
func matchValue(v any) string {
	switch x := v.(type) {
	case string:
		if plainValue(x) {
			return x
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	}
	switch c := canonicalScalar(v).(type) {
	case int64:
		return strconv.FormatInt(c, 10)
	case float64:
		return strconv.FormatFloat(c, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// plainValue reports whether a list key value can be written without quotes.
func plainValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-./:", c) >= 0) {
			return false
		}
	}
	return true
}

// compareSegments orders paths step by step: keys and matched values as
// text, indexes as numbers, and a path before the paths below it.
func compareSegments(a, b []segment) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if c := cmp.Compare(x.kind, y.kind); c != 0 {
			return c
		}
		var c int
		switch x.kind {
		case segKey:
			c = strings.Compare(x.key, y.key)
		case segIndex:
			c = cmp.Compare(x.index, y.index)
		case segMatch:
			if c = strings.Compare(x.key, y.key); c == 0 {
				c = compareScalars(x.value, y.value)
			}
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// compareScalars orders list key values: numbers by value, anything else by
// its text.
func compareScalars(a, b any) int {
	af, aok := number(a)
	bf, bok := number(b)
	switch {
	case aok && bok:
		return cmp.Compare(af, bf)
	case aok:
		return -1
	case bok:
		return 1
	}
	return strings.Compare(matchValue(a), matchValue(b))
}
