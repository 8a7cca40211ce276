package gitops

import (
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
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

// serviceCRD is the universe Service CRD (group hanzo.ai), as `operator crds`
// installs it.
func serviceCRD(tb testing.TB) []byte {
	tb.Helper()
	crds, err := kinds.CRDs("hanzo.ai")
	if err != nil {
		tb.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Name == "services.hanzo.ai" {
			crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
			b, err := yaml.Marshal(crd)
			if err != nil {
				tb.Fatal(err)
			}
			return b
		}
	}
	tb.Fatal("no services.hanzo.ai CRD")
	return nil
}

func serviceFile(ns string, i, version int) []byte {
	return fmt.Appendf(nil, `apiVersion: hanzo.ai/v1
kind: Service
metadata:
  name: svc-%04d
  namespace: %s
spec:
  image: {repository: ghcr.io/hanzoai/notes, tag: "v2.1.%d"}
  replicas: 2
  labels: {team: notes}
  ports:
    - {name: http, containerPort: 8080, servicePort: 80}
  env:
    - {name: MODE, value: production}
`, i, ns, version)
}

func servicePath(i int) string { return fmt.Sprintf("crs/services/svc-%04d.yaml", i) }

// serviceFixture is a repository: the Service CRD, a Namespace and n
// Service CRs, one file each.
func serviceFixture(tb testing.TB, ns string, n int) map[string][]byte {
	files := map[string][]byte{
		"crs/crd.yaml": serviceCRD(tb),
		"crs/ns.yaml":  fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
	}
	for i := range n {
		files[servicePath(i)] = serviceFile(ns, i, 0)
	}
	return files
}
