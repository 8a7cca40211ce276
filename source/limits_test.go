package source

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"
)

// parseOne parses one file under l and returns its objects and file errors.
func parseOne(t *testing.T, l Limits, files ...File) ([]Object, []FileError) {
	t.Helper()
	return ParseLimited(&Snapshot{Revision: "r", Files: files}, l)
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: ns}\n"
}

// TestParseLimits: every limit is a FileError naming the file and the limit;
// the files within the limits are still parsed.
func TestParseLimits(t *testing.T) {
	big := File{Path: "big.yaml", Data: []byte(cm("big") + "data: {k: " + strings.Repeat("x", 200) + "}\n")}
	cases := map[string]struct {
		limits Limits
		files  []File
		want   []string // object names
		refuse map[string]error
	}{
		"file over the size": {
			limits: Limits{FileBytes: 100},
			files:  []File{big, {Path: "ok.yaml", Data: []byte(cm("ok"))}},
			want:   []string{"ok"}, refuse: map[string]error{"big.yaml": ErrTooLarge},
		},
		"declared size over the limit, unread": {
			limits: Limits{FileBytes: 100},
			files:  []File{{Path: "huge.yaml", Size: 60 << 20}, {Path: "ok.yaml", Data: []byte(cm("ok"))}},
			want:   []string{"ok"}, refuse: map[string]error{"huge.yaml": ErrTooLarge},
		},
		"snapshot total": {
			limits: Limits{TotalBytes: int64(2 * len(cm("a")))},
			files:  []File{{Path: "a.yaml", Data: []byte(cm("a"))}, {Path: "b.yaml", Data: []byte(cm("b"))}, {Path: "c.yaml", Data: []byte(cm("c"))}},
			want:   []string{"a", "b"}, refuse: map[string]error{"c.yaml": ErrSnapshotTooLarge},
		},
		"file count": {
			limits: Limits{Files: 1},
			files:  []File{{Path: "a.yaml", Data: []byte(cm("a"))}, {Path: "b.yaml", Data: []byte(cm("b"))}},
			want:   []string{"a"}, refuse: map[string]error{"b.yaml": ErrTooManyFiles},
		},
		"documents per file": {
			limits: Limits{Documents: 2},
			files:  []File{{Path: "many.yaml", Data: []byte(cm("x") + "---\n" + cm("y") + "---\n" + cm("z"))}, {Path: "ok.yaml", Data: []byte(cm("ok"))}},
			want:   []string{"ok"}, refuse: map[string]error{"many.yaml": ErrTooManyDocuments},
		},
		"refused by the source": {
			files: []File{{Path: "link.yaml", Refused: ErrSymlink}, {Path: "ok.yaml", Data: []byte(cm("ok"))}},
			want:  []string{"ok"}, refuse: map[string]error{"link.yaml": ErrSymlink},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, errs := parseOne(t, tc.limits, tc.files...)
			var got []string
			for _, o := range objs {
				got = append(got, o.Obj.GetName())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("objects %v, want %v", got, tc.want)
			}
			if len(errs) != len(tc.refuse) {
				t.Fatalf("file errors %v, want %v", errs, tc.refuse)
			}
			for _, e := range errs {
				if !errors.Is(e, tc.refuse[e.File]) || !strings.Contains(e.Error(), e.File) {
					t.Errorf("%s: %v, want %v naming the file", e.File, e, tc.refuse[e.File])
				}
			}
		})
	}
}

// TestParseStrictYAML pins what the YAML library does with hostile input:
// duplicate keys, alias bombs, deep nesting, non-UTF-8 and UTF-16 files are
// each a named refusal of that file, never a hang or a silently wrong object.
func TestParseStrictYAML(t *testing.T) {
	aliasBomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, prev := 'b', 'a'; i <= 'i'; i, prev = i+1, i {
		aliasBomb += fmt.Sprintf("%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	aliasBomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: ns}\n" + aliasBomb
	deep := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep, namespace: ns}\ndata: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"
	u16 := []byte{0xFF, 0xFE}
	for _, r := range utf16.Encode([]rune(cm("wide"))) {
		u16 = append(u16, byte(r), byte(r>>8))
	}
	cases := map[string]struct {
		data string
		want string // in the error
	}{
		"duplicate key":        {cm("dup") + "data: {k: a}\ndata: {k: b}\n", `"data" already set`},
		"duplicate nested key": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup, namespace: ns, name: other}\n", `"name" already set`},
		"alias bomb":           {aliasBomb, "excessive aliasing"},
		"deep nesting":         {deep, "exceeded max depth"},
		"not UTF-8":            {cm("latin1") + "data: {k: caf\xe9}\n", "not UTF-8"},
		"UTF-16":               {string(u16), "UTF-16"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, errs := parseOne(t, Limits{}, File{Path: "bad.yaml", Data: []byte(tc.data)}, File{Path: "ok.yaml", Data: []byte(cm("ok"))})
			if len(objs) != 1 || objs[0].Obj.GetName() != "ok" {
				t.Errorf("objects %d, want only ok.yaml's", len(objs))
			}
			if len(errs) != 1 || errs[0].File != "bad.yaml" || !errors.Is(errs[0], ErrMalformed) {
				t.Fatalf("file errors %v, want bad.yaml malformed", errs)
			}
			if !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("error %q does not say %q", errs[0].Error(), tc.want)
			}
		})
	}
}

// TestParseLargestFileBoundedMemory: a file at the default size limit parses
// within a bounded heap (a 10 MiB ConfigMap value), and the one over it is
// refused without decoding.
func TestParseLargestFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of MiB")
	}
	val := strings.Repeat("x", DefaultFileBytes-200)
	data := []byte(cm("max") + "data: {k: " + val + "}\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	objs, errs := parseOne(t, Limits{}, File{Path: "max.yaml", Data: data},
		File{Path: "over.yaml", Data: bytes.Repeat([]byte("#"), DefaultFileBytes+1)})
	runtime.ReadMemStats(&after)
	if len(objs) != 1 || len(errs) != 1 || !errors.Is(errs[0], ErrTooLarge) {
		t.Fatalf("objects %d, errors %v", len(objs), errs)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("parsing a %d MiB file allocated %d MiB", len(data)>>20, alloc>>20)
	if alloc > 40*uint64(len(data)) {
		t.Errorf("parsing allocated %d bytes for a %d byte file", alloc, len(data))
	}
}
