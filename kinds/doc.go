// Package kinds holds the custom resource types of the universe API, their generated
// CustomResourceDefinitions, and the pure builders that turn each Kind into the workloads
// it stands for. Nothing here talks to a cluster, reads the environment or the clock.
package kinds
