package gitops

import (
	"strconv"
	"strings"
	"testing"

	"github.com/openuniverse/operator/reconcile/apply"
)

func cmRef(name string) apply.ObjRef {
	return apply.ObjRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}
}

func TestNextInventory(t *testing.T) {
	const rev1, rev2, rev3 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	empty := Inventory{Entries: map[key]InventoryEntry{}}
	inv, newly := NextInventory(empty, rev1, []Declared{
		{Ref: cmRef("made"), File: "a.yaml", Action: apply.Created, UID: "u1", Digest: strings.Repeat("d", 32), Fingerprint: strings.Repeat("f", 64)},
		{Ref: cmRef("adopted"), File: "a.yaml", Action: apply.Updated, UID: "u2"},
		{Ref: cmRef("broken"), File: "a.yaml", Action: apply.Failed},
	}, nil, nil, nil, nil)
	if len(newly) != 0 || len(inv.Entries) != 2 {
		t.Fatalf("first sweep: %d newly orphaned, %d entries; want 0 and 2 (a failed object never applied is not recorded)", len(newly), len(inv.Entries))
	}
	made := inv.Entries[key{GroupKind: cmRef("made").GroupKind(), Namespace: "ns", Name: "made"}]
	if !made.Created || made.Digest != strings.Repeat("d", 16) || made.Fingerprint != strings.Repeat("f", 16) || made.UID != "u1" {
		t.Errorf("made = %+v, want created with short hashes and its uid", made)
	}

	// Round trip through the ConfigMap text, byte-stable.
	text, over := inv.Encode()
	back, err := DecodeInventory(text)
	if err != nil || over != 0 {
		t.Fatal(err, over)
	}
	if text2, _ := back.Encode(); text2 != text {
		t.Errorf("encode is not stable:\n%s\n%s", text, text2)
	}

	// rev2 removes both files' objects but "made"'s file only fails to parse: kept.
	inv2, newly := NextInventory(back, rev2, nil, nil, map[string]bool{}, func(InventoryEntry) bool { return false }, nil)
	if len(newly) != 2 {
		t.Fatalf("rev2: newly %v, want both orphaned", newly)
	}
	orph := inv2.Orphans()
	if len(orph) != 2 || orph[0].RemovedIn != rev2 || orph[0].Object.Name != "adopted" || orph[0].Created || !orph[1].Created {
		t.Errorf("orphans %+v: want adopted (not created by us) and made (created), removed in rev2", orph)
	}
	del, kept := DeletionCandidates(inv2)
	if len(del) != 1 || del[0].Object.Name != "made" || len(kept) != 1 {
		t.Errorf("deletion candidates %v kept %v: only the object the sweep created", del, kept)
	}

	// rev3: still absent — the revision that removed it stays rev2, and no new Event.
	inv3, newly := NextInventory(inv2, rev3, nil, nil, nil, nil, nil)
	if len(newly) != 0 || inv3.Orphans()[0].RemovedIn != rev2 {
		t.Errorf("rev3: newly %v, removedIn %s; want none and rev2", newly, inv3.Orphans()[0].RemovedIn)
	}
	// The object deleted from the cluster (orphans --delete): its entry goes.
	inv4, _ := NextInventory(inv3, rev3, nil, nil, nil, func(e InventoryEntry) bool { return e.Name == "made" }, nil)
	if len(inv4.Orphans()) != 1 || inv4.Orphans()[0].Object.Name != "adopted" {
		t.Errorf("after the delete: %v, want adopted only", inv4.Orphans())
	}
	// Back in git: no longer orphaned, and an object recreated by someone else (new uid,
	// not a CREATE of ours) is no longer ours to delete.
	inv5, _ := NextInventory(inv2, rev3, []Declared{{Ref: cmRef("made"), Action: apply.Updated, UID: "other"}}, nil, map[string]bool{"a.yaml": true}, nil, nil)
	for _, e := range inv5.Entries {
		if e.RemovedIn != "" {
			t.Errorf("%s: removedIn %s after it came back (or its file failed to parse)", e.Name, e.RemovedIn)
		}
		if e.Name == "made" && e.Created {
			t.Errorf("made: recreated under another uid and still marked created by the sweep")
		}
	}
	// A skip of the same object (now out of scope, say) keeps it, not orphaned.
	k := key{GroupKind: cmRef("adopted").GroupKind(), Namespace: "ns", Name: "adopted"}
	inv6, newly := NextInventory(back, rev2, nil, map[key]bool{k: true}, nil, nil, nil)
	if len(newly) != 1 || newly[0].Name != "made" || inv6.Entries[k].RemovedIn != "" {
		t.Errorf("skipped object orphaned: %v", newly)
	}
	// An entry in a namespace this sweep does not own (another sweeper's, sharing the
	// operator's namespace) is kept untouched: not orphaned, and an orphan stays one.
	other := func(e InventoryEntry) bool { return e.Namespace == "other" }
	theirs := InventoryEntry{Kind: "ConfigMap", Namespace: "other", Name: "theirs", UID: "u9", Created: true, File: "b.yaml"}
	gone := InventoryEntry{Kind: "ConfigMap", Namespace: "other", Name: "gone", Created: true, File: "b.yaml", RemovedIn: rev1}
	prev := Inventory{Entries: map[key]InventoryEntry{theirs.key(): theirs, gone.key(): gone}}
	for _, e := range back.Entries {
		prev.Entries[e.key()] = e
	}
	inv7, newly := NextInventory(prev, rev2, nil, nil, nil, other, other) // "gone" too: still not this sweep's to drop
	if len(newly) != 2 || newly[0].Namespace != "ns" || newly[1].Namespace != "ns" {
		t.Errorf("rev2 with entries of another namespace: newly %v, want only ns's two", newly)
	}
	if inv7.Entries[theirs.key()] != theirs || inv7.Entries[gone.key()] != gone {
		t.Errorf("another namespace's entries changed: %+v %+v (gone from the cluster or not, they are not this sweep's)", inv7.Entries[theirs.key()], inv7.Entries[gone.key()])
	}
}

func TestDecodeInventoryNamesTheLine(t *testing.T) {
	_, err := DecodeInventory("\tConfigMap\tns\ta\t\tc\t\t\tf\t\nbroken line\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}

func TestInventoryIsBounded(t *testing.T) {
	inv := Inventory{Entries: map[key]InventoryEntry{}}
	for i := range 8000 {
		e := InventoryEntry{Kind: "ConfigMap", Namespace: "ns", Name: strings.Repeat("n", 40) + strconv.Itoa(i),
			UID: strings.Repeat("u", 36), Digest: strings.Repeat("d", 16), Fingerprint: strings.Repeat("f", 16), File: "apps/some/file.yaml"}
		inv.Entries[e.key()] = e
	}
	text, over := inv.Encode()
	if len(text) > MaxInventoryBytes || over == 0 {
		t.Errorf("%d bytes, %d over: want at most %d bytes and the rest counted", len(text), over, MaxInventoryBytes)
	}
}
