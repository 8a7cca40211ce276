package deploy

import (
	"encoding/json"
	"strings"
)

// fieldFilter is Argo CD's ?fields=a.b,c selection: keep only the named paths (a path keeps
// its whole subtree), or with a leading "-" drop them. Arrays apply the rest of the path to
// each element.
type fieldFilter struct {
	exclude bool
	tree    map[string]any // nested map; an empty map marks the end of a path
}

// parseFields reads the fields parameter; nil means no selection.
func parseFields(raw string) *fieldFilter {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil
	}
	f := &fieldFilter{tree: map[string]any{}}
	if strings.HasPrefix(raw, "-") {
		f.exclude, raw = true, raw[1:]
	}
	for _, p := range strings.Split(raw, ",") {
		p = strings.TrimPrefix(strings.TrimSpace(p), "-")
		if p == "" {
			continue
		}
		node := f.tree
		parts := strings.Split(p, ".")
		for i, part := range parts {
			next, ok := node[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[part] = next
			}
			if i == len(parts)-1 {
				clear(next) // a shorter path wins: keep (or drop) the whole subtree
				next[leafMark] = true
			}
			if _, leaf := next[leafMark]; leaf {
				break
			}
			node = next
		}
	}
	return f
}

const leafMark = "\x00leaf"

// apply marshals v and returns it filtered.
func (f *fieldFilter) apply(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return json.RawMessage(b), nil
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if f.exclude {
		return drop(doc, f.tree), nil
	}
	return keep(doc, f.tree), nil
}

func keep(doc any, tree map[string]any) any {
	if _, leaf := tree[leafMark]; leaf {
		return doc
	}
	switch d := doc.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range tree {
			if v, ok := d[k]; ok {
				out[k] = keep(v, sub.(map[string]any))
			}
		}
		return out
	case []any:
		out := make([]any, len(d))
		for i, e := range d {
			out[i] = keep(e, tree)
		}
		return out
	}
	return doc
}

func drop(doc any, tree map[string]any) any {
	switch d := doc.(type) {
	case map[string]any:
		for k, sub := range tree {
			st := sub.(map[string]any)
			if _, leaf := st[leafMark]; leaf {
				delete(d, k)
			} else if v, ok := d[k]; ok {
				d[k] = drop(v, st)
			}
		}
		return d
	case []any:
		for i, e := range d {
			d[i] = drop(e, tree)
		}
		return d
	}
	return doc
}
