package gitops

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openuniverse/operator/reconcile/apply"
)

// InventoryKey is the data key of the inventory ConfigMap that holds the entries.
const InventoryKey = "inventory"

// MaxInventoryBytes bounds the encoded inventory: a ConfigMap holds at most 1 MiB. Entries
// past it are not recorded (Inventory.Overflow counts them), so the removal of those
// objects from git goes unreported; at ~150 bytes an entry that is some 6 000 objects.
const MaxInventoryBytes = 900 << 10

// Orphaned is the action of an object the git field manager applied that git no longer
// declares. The sweep never deletes it: `operator orphans --delete` does, on request.
const Orphaned apply.Action = "ORPHANED"

// InventoryEntry is one object the git sweep applied, as kept in the inventory ConfigMap.
type InventoryEntry struct {
	Group, Kind, Namespace, Name string
	// UID is the object's uid when the sweep saw it live ("" when its kind is not watched);
	// `orphans --delete` deletes with it as a precondition.
	UID string
	// Created is true when the sweep created the object (its apply answered CREATE); only
	// those are ever offered for deletion.
	Created bool
	// Digest and Fingerprint are short forms of the desired object's digest and the live
	// object's fingerprint after the apply (apply.Digest, apply.Fingerprint): a sweeper
	// that starts finds an object in sync without applying it (operator up's no-op).
	Digest, Fingerprint string
	// File is the git file that declared it last.
	File string
	// RemovedIn is the first revision the sweep read that no longer declares the object
	// ("" while git declares it): the commit that removed it when the sweep sees every
	// push (the webhook), else the first one after it.
	RemovedIn string
}

// Ref is the entry's object reference (without a version).
func (e InventoryEntry) Ref() apply.ObjRef {
	return apply.ObjRef{Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

func (e InventoryEntry) key() key {
	return key{GroupKind: e.Ref().GroupKind(), Namespace: e.Namespace, Name: e.Name}
}

// Inventory is what the git field manager applied, by object.
type Inventory struct {
	Entries map[key]InventoryEntry
	// Overflow is how many objects did not fit under MaxInventoryBytes.
	Overflow int
}

// Orphan is an inventory entry git no longer declares, as GET /gitops and `operator
// orphans` list it.
type Orphan struct {
	Object    apply.ObjRef `json:"object"`
	File      string       `json:"file,omitempty"`
	RemovedIn string       `json:"removedIn"`
	// Created: the sweep created it, so `orphans --delete` may delete it.
	Created bool   `json:"created"`
	UID     string `json:"uid,omitempty"`
}

// Orphans lists the entries git no longer declares, ordered by object.
func (inv Inventory) Orphans() []Orphan {
	var out []Orphan
	for _, e := range inv.sorted() {
		if e.RemovedIn != "" {
			out = append(out, Orphan{Object: e.Ref(), File: e.File, RemovedIn: e.RemovedIn, Created: e.Created, UID: e.UID})
		}
	}
	return out
}

func (inv Inventory) sorted() []InventoryEntry {
	keys := slices.SortedFunc(maps.Keys(inv.Entries), func(a, b key) int {
		return strings.Compare(a.String(), b.String())
	})
	out := make([]InventoryEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, inv.Entries[k])
	}
	return out
}

func (k key) String() string { return k.Group + "\t" + k.Kind + "\t" + k.Namespace + "\t" + k.Name }

// Encode renders the inventory as the ConfigMap's text: one tab-separated line per
// object, sorted, so the same inventory always encodes to the same bytes (an idle sweep
// writes nothing). Entries past MaxInventoryBytes are left out and counted.
func (inv Inventory) Encode() (string, int) {
	var b strings.Builder
	over := 0
	for _, e := range inv.sorted() {
		c := "-"
		if e.Created {
			c = "c"
		}
		line := strings.Join([]string{e.Group, e.Kind, e.Namespace, e.Name, e.UID, c, e.Digest, e.Fingerprint, e.File, e.RemovedIn}, "\t") + "\n"
		if b.Len()+len(line) > MaxInventoryBytes {
			over++
			continue
		}
		b.WriteString(line)
	}
	return b.String(), over
}

// DecodeInventory reads the ConfigMap's text; a line that does not have the ten fields
// is an error naming the line (the inventory is the operator's own: a hand edit broke it).
func DecodeInventory(text string) (Inventory, error) {
	inv := Inventory{Entries: map[key]InventoryEntry{}}
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 10 || f[1] == "" || f[3] == "" || (f[5] != "c" && f[5] != "-") {
			return Inventory{}, fmt.Errorf("inventory line %d: want 10 tab-separated fields (group, kind, namespace, name, uid, c|-, digest, fingerprint, file, removedIn)", i+1)
		}
		e := InventoryEntry{Group: f[0], Kind: f[1], Namespace: f[2], Name: f[3], UID: f[4], Created: f[5] == "c",
			Digest: f[6], Fingerprint: f[7], File: f[8], RemovedIn: f[9]}
		inv.Entries[e.key()] = e
	}
	return inv, nil
}

// shortHash is the inventory's form of a digest or fingerprint.
func shortHash(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// Declared is one object of a sweep as the inventory update sees it.
type Declared struct {
	Ref  apply.ObjRef
	File string
	// Action is the sweep's result for it; only an applied object (created, updated, in
	// sync, adopted) refreshes its entry, anything else (failed, held, suspended) keeps it.
	Action apply.Action
	// UID, Digest and Fingerprint as the sweep knows them after the apply.
	UID, Digest, Fingerprint string
}

// Gone reports, for an orphan, whether the watch shows the object deleted (true) from the
// cluster, so its entry is dropped; false when present or unknown.
type Gone func(InventoryEntry) bool

// NextInventory is the inventory after a sweep of revision rev: every applied object
// recorded (created once, created forever, until the object is recreated by someone
// else: a new uid with no CREATE of ours clears it); entries of objects still declared but
// not applied kept; entries git no longer declares marked RemovedIn rev (or kept at the
// revision first marked); orphans the cluster no longer has dropped. keep lists objects
// still present in git though not planned (skipped by scope, duplicates), and files the
// files whose parse failed this sweep: their entries are kept, not orphaned, since git
// may still declare them. Entries outside reports those out of this sweep's scope (a
// namespace it does not own: recorded by a sweeper of other namespaces sharing the
// operator's namespace, `operator up --gitops-namespaces` beside `run`, or before the
// scope narrowed); they are kept exactly as they are, neither orphaned nor revived, since
// this sweep cannot tell whether git still declares them. It returns the entries newly
// orphaned by this sweep. It is pure.
func NextInventory(prev Inventory, rev string, declared []Declared, keep map[key]bool, files map[string]bool, gone Gone, outside func(InventoryEntry) bool) (Inventory, []InventoryEntry) {
	next := Inventory{Entries: make(map[key]InventoryEntry, len(declared))}
	seen := map[key]bool{}
	for _, d := range declared {
		k := key{GroupKind: d.Ref.GroupKind(), Namespace: d.Ref.Namespace, Name: d.Ref.Name}
		seen[k] = true
		p, had := prev.Entries[k]
		switch d.Action {
		case apply.Created, apply.Updated, apply.InSync, apply.Adopted:
		default:
			if had {
				p.RemovedIn, p.File = "", d.File
				next.Entries[k] = p
			}
			continue
		}
		e := InventoryEntry{Group: d.Ref.Group, Kind: d.Ref.Kind, Namespace: d.Ref.Namespace, Name: d.Ref.Name,
			UID: d.UID, Digest: shortHash(d.Digest), Fingerprint: shortHash(d.Fingerprint), File: d.File}
		switch {
		case d.Action == apply.Created:
			e.Created = true
		case had && (p.UID == "" || d.UID == "" || p.UID == d.UID):
			e.Created = p.Created
		}
		if e.UID == "" && had {
			e.UID = p.UID
		}
		next.Entries[k] = e
	}
	var orphaned []InventoryEntry
	for k, p := range prev.Entries {
		if seen[k] {
			continue
		}
		if outside != nil && outside(p) {
			next.Entries[k] = p
			continue
		}
		if keep[k] || files[p.File] {
			p.RemovedIn = ""
			next.Entries[k] = p
			continue
		}
		if gone != nil && gone(p) {
			continue // deleted from the cluster (by orphans --delete, or anyone): no longer ours to report
		}
		if p.RemovedIn == "" {
			p.RemovedIn = rev
			orphaned = append(orphaned, p)
		}
		next.Entries[k] = p
	}
	slices.SortFunc(orphaned, func(a, b InventoryEntry) int { return strings.Compare(a.key().String(), b.key().String()) })
	return next, orphaned
}

// DeletionCandidates are the orphans `operator orphans --delete` may delete: listed as
// orphaned, created by the git sweep, and (checked by the caller against the live object)
// still carrying the uid the inventory recorded. It is pure.
func DeletionCandidates(inv Inventory) (del []Orphan, kept []Orphan) {
	for _, o := range inv.Orphans() {
		if o.Created && o.UID != "" {
			del = append(del, o)
		} else {
			kept = append(kept, o)
		}
	}
	return del, kept
}
