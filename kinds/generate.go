package kinds

// Regenerate deepcopy, the CRDs under crd/ and the committed bundles under crd/bundles/ with
// `go generate ./kinds`. TestBundles fails while a bundle is stale.

//go:generate go tool controller-gen object paths=./...
//go:generate sh -c "rm -f crd/v1/*.yaml crd/v1alpha1/*.yaml crd/hip/*.yaml crd/fleet/*.yaml crd/gitsync/*.yaml"
//go:generate go tool controller-gen crd:maxDescLen=0 paths=./v1 output:crd:dir=./crd/v1
//go:generate go tool controller-gen crd:maxDescLen=0 paths=./v1alpha1 output:crd:dir=./crd/v1alpha1
//go:generate go tool controller-gen crd:maxDescLen=0 paths=./hip output:crd:dir=./crd/hip
//go:generate go tool controller-gen crd:maxDescLen=0 paths=./fleet output:crd:dir=./crd/fleet
//go:generate go tool controller-gen crd:maxDescLen=0 paths=./gitsync output:crd:dir=./crd/gitsync
//go:generate go test . -run ^TestBundles$ -update
