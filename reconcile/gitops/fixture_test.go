package gitops

import (
	"fmt"
	"strings"
)

// A tiny CRD for tests and benchmarks, with a status subresource.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.openuniverse.dev}
spec:
  group: test.openuniverse.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func widgetFile(ns string, i, size int) []byte {
	return fmt.Appendf(nil, `apiVersion: test.openuniverse.dev/v1
kind: Widget
metadata:
  name: w-%04d
  namespace: %s
  labels: {app.kubernetes.io/managed-by: gitops-test}
spec:
  size: %d
  image: registry.example/widget:1.0.0
  ports: [{name: http, port: 8080}]
`, i, ns, size)
}

func widgetPath(i int) string { return fmt.Sprintf("crs/widgets/w-%04d.yaml", i) }

// fixture is a repository: the CRD, a Namespace, n Widgets (one file each)
// and cms ConfigMaps in it.
func fixture(ns string, n, cms int) map[string][]byte {
	files := map[string][]byte{
		"crs/crd.yaml": []byte(widgetCRD),
		"crs/ns.yaml":  fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		"README.md":    []byte("not a manifest\n"),
	}
	for i := range n {
		files[widgetPath(i)] = widgetFile(ns, i, 1)
	}
	for i := range cms {
		files[fmt.Sprintf("crs/config/cm-%d.yaml", i)] = fmt.Appendf(nil,
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {k: v%d}\n", i, ns, i)
	}
	return files
}

// manifests joins the manifest files into one multi-document stream, for
// kubectl.
func manifests(files map[string][]byte) string {
	var b strings.Builder
	for p, d := range files {
		if strings.HasSuffix(p, ".yaml") {
			b.WriteString("---\n")
			b.Write(d)
		}
	}
	return b.String()
}
