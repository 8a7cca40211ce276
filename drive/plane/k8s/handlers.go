package k8s

// handlers is the one registry: every op of ops.All, by name, to its typed function.
func handlers() map[string]handler {
	return map[string]handler{
		"clusters.list":       handle(clustersList),
		"clusters.get":        handle(clustersGet),
		"clusters.register":   handle(clustersRegister),
		"clusters.deregister": handle(clustersDeregister),
		"clusters.status":     handle(clustersStatus),

		"nodes.list":        handle(nodesList),
		"nodes.cordon":      handle(nodesCordon),
		"nodes.volumeStats": handle(nodesVolumeStats),

		"namespaces.list":   handle(namespacesList),
		"namespaces.get":    handle(namespacesGet),
		"namespaces.create": handle(namespacesCreate),
		"namespaces.delete": handle(namespacesDelete),

		"pods.list": handle(podsList),
		"pods.logs": handle(podsLogs),

		"volumes.listClaims":  handle(volumesListClaims),
		"volumes.expandClaim": handle(volumesExpandClaim),
		"volumes.listVolumes": handle(volumesListVolumes),
		"volumes.listClasses": handle(volumesListClasses),

		"workloads.list":    handle(workloadsList),
		"workloads.get":     handle(workloadsGet),
		"workloads.scale":   handle(workloadsScale),
		"workloads.restart": handle(workloadsRestart),
		"workloads.pause":   handle(workloadsPause),
		"workloads.resume":  handle(workloadsResume),
		"workloads.history": handle(workloadsHistory),
		"workloads.delete":  handle(workloadsDelete),

		"jobs.list":    handle(jobsList),
		"jobs.trigger": handle(jobsTrigger),
		"jobs.delete":  handle(jobsDelete),

		"resources.list":   handle(resourcesList),
		"resources.get":    handle(resourcesGet),
		"resources.apply":  handle(resourcesApply),
		"resources.delete": handle(resourcesDelete),
		"resources.watch":  handle(resourcesWatch),

		"access.review": handle(accessReview),
		"metrics.pods":  handle(metricsPods),
	}
}
