package drive

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the collectors of the drive loops; cmd/operator registers them once, with every
// other loop's, on the registry /metrics serves.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{metricPolls, metricDecisions, metricWrites, metricTenants}
}
