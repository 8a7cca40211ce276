// Package testbed gives tests a real Kubernetes API server.
//
// APIServer starts one envtest control plane (etcd + kube-apiserver built by
// hack/build-controlplane.sh, no download) per test binary and returns its *rest.Config.
// Packages that use it wire TestMain through Run so the server is stopped at exit:
//
//	func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }
//
// Cluster starts the full control plane (controller-manager, scheduler, kwok fake node)
// for end-to-end tests, or uses E2E_KUBECONFIG when set.
package testbed
