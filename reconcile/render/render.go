package render

import (
	"bytes"
	"fmt"
	"io"

	"github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// Mask replaces every Secret value render and diff print.
const Mask = "***"

// Rendered is what one input object stands for: a custom resource a Kind serves becomes the
// objects its controller applies, any other object itself.
type Rendered struct {
	// From is the input object and where it was read.
	From source.Object
	// CR is true when a Kind of the Registry serves the input object.
	CR bool
	// Objects are normalized and in the builder's order; Secret values are not yet masked.
	Objects []*unstructured.Unstructured
	// Halt is set when the CR deliberately materializes nothing.
	Halt *kinds.Halt
	// Err names the file and object that failed.
	Err error
}

// Renderer turns input objects into the objects the controllers would apply, through the
// same Registry.Build and the same normalization the apply path sees. It needs no cluster.
type Renderer struct {
	Registry kinds.Registry
	APIGroup string
	// Inputs are the objects a build may read (Entry.Inputs: a LuxNetwork's LuxChains), as
	// the controller lists them from the cluster; Render sets them from the objects it renders.
	Inputs []*unstructured.Unstructured
	// Build is the operator's build settings beyond the CR (AllowUnverifiedSeed,
	// StaticServerImage), as `operator run` gives its controllers, so a review builds what run
	// applies. Its APIGroup and Inputs are ignored: the Renderer's own are used.
	Build kinds.Context
}

// Render renders every object of objs, in order. One failure never stops the others. Each
// build reads, among objs, the objects of its Entry's input Kinds, as the controller reads
// them from its cache.
func (r Renderer) Render(objs []source.Object) []Rendered {
	if r.Inputs == nil {
		for _, o := range objs {
			r.Inputs = append(r.Inputs, o.Obj)
		}
	}
	out := make([]Rendered, 0, len(objs))
	for _, o := range objs {
		out = append(out, r.RenderOne(o))
	}
	return out
}

// inputsFor returns the Renderer's inputs of the kinds e reads.
func (r Renderer) inputsFor(e kinds.Entry) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r.Inputs {
		for _, in := range e.Inputs {
			if u.GroupVersionKind().GroupKind() == in.GroupKind() {
				out = append(out, u.DeepCopy())
			}
		}
	}
	return out
}

// RenderOne renders one object. The CR's uid (empty when read from a file) becomes the
// children's owner reference uid.
func (r Renderer) RenderOne(o source.Object) Rendered {
	rd := Rendered{From: o}
	gvk := o.Obj.GroupVersionKind()
	e, ok := r.Registry.Lookup(gvk, r.APIGroup)
	if !ok {
		if r.universeGroup(gvk.Group) {
			rd.Err = fmt.Errorf("%s: %s: no Kind of universe %s serves %s %s", Location(o), apply.RefOf(o.Obj), r.APIGroup, gvk.GroupVersion(), gvk.Kind)
			return rd
		}
		obj := o.Obj.DeepCopy()
		if err := normalize.Unstructured(obj); err != nil {
			rd.Err = fmt.Errorf("%s: normalize %s: %w", Location(o), apply.RefOf(obj), err)
			return rd
		}
		rd.Objects = []*unstructured.Unstructured{obj}
		return rd
	}
	rd.CR = true
	c := r.Build
	c.APIGroup, c.Inputs = r.APIGroup, r.inputsFor(e)
	objs, err := r.Registry.Build(o.Obj.DeepCopy(), c)
	if h, ok := kinds.AsHalt(err); ok {
		rd.Halt = h
		return rd
	}
	if err != nil {
		rd.Err = fmt.Errorf("%s: build %s: %w", Location(o), apply.RefOf(o.Obj), err)
		return rd
	}
	if err := normalize.UnstructuredList(objs); err != nil {
		rd.Err = fmt.Errorf("%s: normalize the children of %s: %w", Location(o), apply.RefOf(o.Obj), err)
		return rd
	}
	rd.Objects = objs
	return rd
}

// universeGroup reports whether group belongs to one of the universe's families; an
// object there that no Kind serves is a mistake, not a plain object to pass through.
func (r Renderer) universeGroup(group string) bool {
	for _, f := range []kinds.Family{kinds.FamilyUniverse, kinds.FamilyKMS, kinds.FamilyChain} {
		if f.Group(r.APIGroup) == group {
			return true
		}
	}
	return group == v1.ChainGroup
}

// Location names where an input object was read: file, and document when the file holds
// several.
func Location(o source.Object) string {
	if o.Doc <= 1 {
		return o.File
	}
	return fmt.Sprintf("%s (document %d)", o.File, o.Doc)
}

// WriteYAML prints the rendered objects as one YAML stream, each document starting with
// "---", in input order and then builder order, with Secret data masked. A Halt is a
// comment line; failed objects print nothing (the caller reports their errors).
func WriteYAML(w io.Writer, rs []Rendered) error {
	var b bytes.Buffer
	for _, rd := range rs {
		if rd.Halt != nil {
			fmt.Fprintf(&b, "# %s: %s materializes nothing: %s\n", Location(rd.From), apply.RefOf(rd.From.Obj), rd.Halt.Error())
			continue
		}
		for _, obj := range rd.Objects {
			doc, err := MarshalMasked(obj)
			if err != nil {
				return err
			}
			b.WriteString("---\n")
			b.Write(doc)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Errors returns the errors of rs, in order.
func Errors(rs []Rendered) []error {
	var errs []error
	for _, rd := range rs {
		if rd.Err != nil {
			errs = append(errs, rd.Err)
		}
	}
	return errs
}

// MarshalMasked renders obj as YAML with the values of a Secret's data and stringData
// replaced by Mask. obj is not modified.
func MarshalMasked(obj *unstructured.Unstructured) ([]byte, error) {
	out, err := yaml.Marshal(MaskSecret(obj).Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", apply.RefOf(obj), err)
	}
	return out, nil
}

// MaskSecret returns obj with every Secret data and stringData value replaced by Mask; any
// other object is returned as is. obj is never modified. See maskSecretFields.
func MaskSecret(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return maskSecretFields(obj, "data", "stringData")
}

// secretAnnotations carry a copy of a Secret (data included) when a client writes them.
var secretAnnotations = []string{corev1LastApplied}

const corev1LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// maskSecretFields returns a copy of a Secret with every value of the given fields replaced
// by Mask (a field that is not a map, a string for instance, is masked whole), and without
// the annotations that copy the Secret (last-applied-configuration); any other object is
// returned as it is.
func maskSecretFields(obj *unstructured.Unstructured, fields ...string) *unstructured.Unstructured {
	if obj == nil || !ssautil.IsSecret(obj) {
		return obj
	}
	masked := obj.DeepCopy()
	for _, field := range fields {
		v, present := masked.Object[field]
		if !present {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			masked.Object[field] = Mask // not a map: nothing of it may show
			continue
		}
		for k := range m {
			m[k] = Mask
		}
	}
	if ann := masked.GetAnnotations(); len(ann) > 0 {
		for _, a := range secretAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			ann = nil
		}
		masked.SetAnnotations(ann)
	}
	return masked
}
