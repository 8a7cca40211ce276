// Package e2e tests the whole loop as a user runs it: the built operator binary against a
// real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok fake nodes) and a local git server.
package e2e
