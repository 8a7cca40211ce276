package gitops_test

import (
	"fmt"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
)

// The sweep's pure core: parse a snapshot, plan it against the scope.
func ExampleScope_Plan() {
	o := gitops.DefaultOptions()
	o.Namespaces = []string{"hanzo"}
	scope, err := o.Scope(gitops.Self{Namespace: "operator-system"})
	if err != nil {
		panic(err)
	}
	snap := &source.Snapshot{Revision: "0123abcd", Files: []source.File{
		{Path: "crs/ns.yaml", Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: hanzo}\n")},
		{Path: "crs/web.yaml", Data: []byte("apiVersion: hanzo.ai/v1\nkind: App\nmetadata: {name: web, namespace: hanzo}\n" +
			"---\napiVersion: hanzo.ai/v1\nkind: App\nmetadata: {name: zen, namespace: zen}\n")},
		{Path: "crs/kustomization.yaml", Data: []byte("resources: []\n")},
	}}
	plan := scope.Plan(source.Parse(snap))
	for _, a := range plan.Applies {
		fmt.Println("apply", a.File, a.Object.GetKind(), a.Object.GetName())
	}
	for _, s := range plan.Skips {
		fmt.Println("skip ", s.Reason, s)
	}
	// Output:
	// apply crs/ns.yaml Namespace hanzo
	// apply crs/web.yaml App web
	// skip  Kustomization crs/kustomization.yaml: kustomization files are not applied; the sweep applies plain manifests
	// skip  NamespaceNotOwned crs/web.yaml (document 2): App zen/zen: namespace zen is not owned (owned: hanzo); add it to --gitops-namespaces (GITOPS_NAMESPACES)
}
