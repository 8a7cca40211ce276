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
		{Path: "crs/app/kustomization.yaml", Data: []byte("namespace: hanzo\nresources: [conf.yaml]\n")},
		{Path: "crs/app/conf.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\n")},
		{Path: "crs/remote/kustomization.yaml", Data: []byte("resources: [https://example.com/base.yaml]\n")},
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
	// apply crs/app/kustomization.yaml ConfigMap conf
	// skip  Kustomization crs/remote/kustomization.yaml: not applied, none of this kustomization is: kustomization refused: crs/remote/kustomization.yaml: remote resource "https://example.com/base.yaml": remote bases are never fetched; vendor it into the repository
	// skip  NamespaceNotOwned crs/web.yaml (document 2): App zen/zen: namespace zen is not owned (owned: hanzo); add it to --gitops-namespaces (GITOPS_NAMESPACES)
}
