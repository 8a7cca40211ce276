package deploy

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil { // integers as int64, as the cache gives them
		t.Fatal(err)
	}
	return u
}

func TestResourceHealth(t *testing.T) {
	cases := []struct {
		name, obj, want string
	}{
		{"deployment ready", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 2}, spec: {replicas: 2},
			status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, HealthHealthy},
		{"deployment paused", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a}, spec: {paused: true}}`, HealthSuspended},
		{"deployment generation behind", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 3}, spec: {replicas: 1},
			status: {observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1}}`, HealthProgressing},
		{"deployment deadline", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, HealthDegraded},
		{"deployment old replicas", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, replicas: 2, updatedReplicas: 1, availableReplicas: 1}}`, HealthProgressing},
		{"deployment unavailable", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 1}, spec: {replicas: 2},
			status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1}}`, HealthProgressing},
		{"statefulset unobserved", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, generation: 1}, spec: {replicas: 1}}`, HealthProgressing},
		{"statefulset ready", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, readyReplicas: 1, currentRevision: r1, updateRevision: r1}}`, HealthHealthy},
		{"statefulset revision rolling", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, generation: 1}, spec: {replicas: 1},
			status: {observedGeneration: 1, readyReplicas: 1, currentRevision: r1, updateRevision: r2}}`, HealthProgressing},
		{"statefulset OnDelete", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, generation: 1}, spec: {replicas: 1, updateStrategy: {type: OnDelete}},
			status: {observedGeneration: 1, readyReplicas: 1, currentRevision: r1, updateRevision: r2}}`, HealthHealthy},
		{"statefulset partition", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, generation: 1}, spec: {replicas: 3, updateStrategy: {rollingUpdate: {partition: 1}}},
			status: {observedGeneration: 1, readyReplicas: 3, updatedReplicas: 1}}`, HealthProgressing},
		{"ingress without address", `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: a}}`, HealthProgressing},
		{"ingress with address", `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: a}, status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}}`, HealthHealthy},
		{"pvc bound", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a}, status: {phase: Bound}}`, HealthHealthy},
		{"pvc lost", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a}, status: {phase: Lost}}`, HealthDegraded},
		{"pvc odd", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: a}, status: {phase: Weird}}`, HealthUnknown},
		{"service", `{apiVersion: v1, kind: Service, metadata: {name: a}, spec: {type: ClusterIP}}`, HealthHealthy},
		{"service lb pending", `{apiVersion: v1, kind: Service, metadata: {name: a}, spec: {type: LoadBalancer}}`, HealthProgressing},
		{"pod crashloop", `{apiVersion: v1, kind: Pod, metadata: {name: a}, status: {phase: Running, containerStatuses: [{state: {waiting: {reason: CrashLoopBackOff}}}]}}`, HealthDegraded},
		{"pod ready", `{apiVersion: v1, kind: Pod, metadata: {name: a}, status: {phase: Running, conditions: [{type: Ready, status: "True"}]}}`, HealthHealthy},
		{"pod pending", `{apiVersion: v1, kind: Pod, metadata: {name: a}, status: {phase: Pending}}`, HealthProgressing},
		{"deleting", `{apiVersion: v1, kind: Service, metadata: {name: a, deletionTimestamp: "2026-01-01T00:00:00Z"}}`, HealthProgressing},
		{"hpa", `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: a}, status: {conditions: [{type: AbleToScale, status: "True"}]}}`, HealthHealthy},
		{"configmap has no health", `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`, ""},
		{"a service-named CR is not a core Service", `{apiVersion: hanzo.ai/v1, kind: Service, metadata: {name: a}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ResourceHealth(obj(t, c.obj))
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("health %+v, want none", got)
			case c.want != "" && (got == nil || got.Status != c.want):
				t.Fatalf("health %+v, want %s", got, c.want)
			}
		})
	}
}

func TestWorseOrder(t *testing.T) {
	order := []string{HealthHealthy, HealthSuspended, HealthProgressing, HealthMissing, HealthDegraded, HealthUnknown}
	for i := range order {
		for j := range order {
			if Worse(order[i], order[j]) != (i > j) {
				t.Errorf("Worse(%s, %s) = %v", order[i], order[j], i <= j)
			}
		}
	}
}

func TestFields(t *testing.T) {
	doc := map[string]any{"metadata": map[string]any{"resourceVersion": "9", "x": 1},
		"items": []any{map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"l": "v"}}, "spec": map[string]any{"p": 1}}}}
	cases := map[string]string{
		"metadata.resourceVersion,items.metadata.name": `{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"9"}}`,
		"items.metadata,items.metadata.name":           `{"items":[{"metadata":{"labels":{"l":"v"},"name":"a"}}]}`,
		"items.metadata.name,items.metadata":           `{"items":[{"metadata":{"labels":{"l":"v"},"name":"a"}}]}`,
		"-items.spec,metadata.x":                       `{"items":[{"metadata":{"labels":{"l":"v"},"name":"a"}}],"metadata":{"resourceVersion":"9"}}`,
		"":                                             `{"items":[{"metadata":{"labels":{"l":"v"},"name":"a"},"spec":{"p":1}}],"metadata":{"resourceVersion":"9","x":1}}`,
	}
	for fields, want := range cases {
		out, err := parseFields(fields).apply(doc)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := jsonMarshal(out)
		if string(b) != want {
			t.Errorf("fields %q: %s, want %s", fields, b, want)
		}
	}
}
