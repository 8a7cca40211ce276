package kinds

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

const (
	defaultStorageClass = "do-block-storage"
	defaultVolumeName   = "data"
	headlessSuffix      = "-hs"
)

// engineDefaults is what an engine runs with when the spec says nothing.
type engineDefaults struct {
	image     v1.ImageSpec
	port      int32
	mountPath string
}

// engines is the one table of engine defaults (wire-contract §4, Rust datastore.rs).
var engines = map[v1.Engine]engineDefaults{
	v1.EnginePostgreSQL: {v1.ImageSpec{Repository: "ghcr.io/hanzoai/sql", Tag: "16"}, 5432, "/var/lib/postgresql/data"},
	v1.EngineValkey:     {v1.ImageSpec{Repository: "ghcr.io/hanzoai/kv", Tag: "8"}, 6379, "/data"},
	v1.EngineDocDB:      {v1.ImageSpec{Repository: "ghcr.io/hanzoai/docdb", Tag: "latest"}, 27017, "/state"},
	v1.EngineS3:         {v1.ImageSpec{Repository: "ghcr.io/hanzoai/s3", Tag: "latest"}, 9000, "/data"},
	v1.EngineNATS:       {v1.ImageSpec{Repository: "nats", Tag: "2.10"}, 4222, "/data"},
	v1.EngineDatastore:  {v1.ImageSpec{Repository: "ghcr.io/hanzoai/datastore", Tag: "latest"}, 8080, "/data"},
}

// canonicalEngine maps the legacy minio name to s3 (the component label moved with it).
func canonicalEngine(e v1.Engine) v1.Engine {
	if e == v1.EngineMinio {
		return v1.EngineS3
	}
	if _, ok := engines[e]; !ok {
		return v1.EngineDatastore
	}
	return e
}

// buildDatastore materializes a DBSpec with a fixed engine (wire-contract §4): a StatefulSet
// with one claim template, a ClusterIP Service, a headless Service, one Service per alias and
// one KMSSecret per kmsSecrets entry. The engine comes from the Kind (or App role), never from
// spec.type. crLabels are the CR's labels, whose attribution keys reach the workload.
func buildDatastore(o owner, s *v1.DBSpec, engine v1.Engine, crLabels map[string]string) ([]*unstructured.Unstructured, error) {
	engine = canonicalEngine(engine)
	def := engines[engine]
	img := s.Image
	if img == nil || img.Repository == "" {
		img = &def.image
	}
	labels := standardLabels(o.Name, string(engine), s.PartOf, imageTag(img))
	workloadLabels := maps.Clone(labels)
	for _, k := range attributionLabels {
		if v, ok := crLabels[k]; ok {
			workloadLabels[k] = v
		}
	}
	ports := s.Ports
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Name: string(engine), ContainerPort: def.port}}
	}
	w := &stateful{
		image:              img,
		pullPolicy:         corev1.PullIfNotPresent,
		replicas:           deref32(s.Replicas, 1),
		ports:              ports,
		storage:            &s.Storage,
		mountPath:          def.mountPath,
		labels:             workloadLabels,
		command:            s.Command,
		args:               s.Args,
		env:                s.Env,
		envFrom:            s.EnvFrom,
		volumes:            s.Volumes,
		volumeMounts:       s.VolumeMounts,
		sidecars:           s.Sidecars,
		resources:          s.Resources,
		imagePullSecrets:   s.ImagePullSecrets,
		securityContext:    podSecurityContext(s.SecurityContext, s.FSGroup),
		containerSecurity:  s.ContainerSecurityContext,
		enableServiceLinks: s.EnableServiceLinks,
	}
	children := w.children(o, labels)
	taken := map[string]bool{o.Name: true, o.Name + headlessSuffix: true}
	for _, alias := range s.ServiceAliases {
		if taken[alias] {
			continue // the Service exists already; a second object of the same name would fight it
		}
		taken[alias] = true
		children = append(children, child{clusterIPService(o, alias, labels, ports, false), gvkService})
	}
	out, err := objects(children...)
	if err != nil {
		return nil, err
	}
	return append(out, kmsSecrets(o, s.KMSSecrets, labels)...), nil
}

// stateful is a StatefulSet-backed workload: the datastore engines, Base, MPC, Network,
// LuxRuntime and the two NodeFleet groups all render through it.
type stateful struct {
	// name names the StatefulSet, its main container, its selector and its ClusterIP Service;
	// empty means the CR name. Only a Kind with more than one workload (NodeFleet) sets it.
	name string
	// headless names the headless Service (the StatefulSet's serviceName); empty means
	// <name>-hs.
	headless string
	image    *v1.ImageSpec
	// pullPolicy overrides the image's pull policy when set.
	pullPolicy corev1.PullPolicy
	replicas   int32
	ports      []v1.ServicePort
	// storage adds the claim template; nil runs without one.
	storage *v1.StorageSpec
	// mountPath is where the claim is mounted when volumeMounts is empty.
	mountPath string
	labels    map[string]string
	// podAnnotations go on the pod template only.
	podAnnotations      map[string]string
	command, args       []string
	env                 []corev1.EnvVar
	envFrom             []corev1.EnvFromSource
	volumes             []corev1.Volume
	volumeMounts        []corev1.VolumeMount
	sidecars            []corev1.Container
	resources           *corev1.ResourceRequirements
	liveness, readiness *corev1.Probe
	imagePullSecrets    []corev1.LocalObjectReference
	serviceAccountName  string
	securityContext     *corev1.PodSecurityContext
	containerSecurity   *corev1.SecurityContext
	enableServiceLinks  *bool
	nodeSelector        map[string]string
}

// workloadName is the StatefulSet's name: w.name, else the CR name.
func (w *stateful) workloadName(o owner) string {
	if w.name != "" {
		return w.name
	}
	return o.Name
}

// headlessName is the headless Service's name: w.headless, else <workload>-hs.
func (w *stateful) headlessName(o owner) string {
	if w.headless != "" {
		return w.headless
	}
	return w.workloadName(o) + headlessSuffix
}

// children renders the StatefulSet, the ClusterIP Service named like it and the headless
// Service; the Services carry serviceLabels.
func (w *stateful) children(o owner, serviceLabels map[string]string) []child {
	return []child{
		{w.statefulSet(o), gvkStatefulSet},
		w.clusterIP(o, serviceLabels),
		w.headlessService(o, serviceLabels),
	}
}

// clusterIP is the ClusterIP Service named like the workload, selecting its pods.
func (w *stateful) clusterIP(o owner, labels map[string]string) child {
	name := w.workloadName(o)
	return child{selectingService(o, name, name, labels, w.ports, false), gvkService}
}

// headlessService is the workload's headless Service (its serviceName).
func (w *stateful) headlessService(o owner, labels map[string]string) child {
	return child{selectingService(o, w.headlessName(o), w.workloadName(o), labels, w.ports, true), gvkService}
}

func (w *stateful) statefulSet(o owner) *appsv1.StatefulSet {
	name := w.workloadName(o)
	sel := selectorLabels(name)
	vct := defaultVolumeName
	if w.storage != nil && w.storage.VolumeName != nil && *w.storage.VolumeName != "" {
		vct = *w.storage.VolumeName
	}
	mounts := slices.Clone(w.volumeMounts)
	if len(mounts) == 0 && w.storage != nil {
		mounts = []corev1.VolumeMount{{Name: vct, MountPath: w.mountPath}}
	}
	pull := w.pullPolicy
	if pull == "" {
		pull = pullPolicy(w.image)
	}
	main := corev1.Container{
		Name:            name,
		Image:           imageRef(w.image),
		ImagePullPolicy: pull,
		Command:         w.command,
		Args:            w.args,
		Env:             w.env,
		EnvFrom:         w.envFrom,
		Ports:           containerPorts(w.ports),
		VolumeMounts:    mounts,
		LivenessProbe:   w.liveness,
		ReadinessProbe:  w.readiness,
		SecurityContext: w.containerSecurity,
	}
	if w.resources != nil {
		main.Resources = *w.resources
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: o.meta(name, w.labels),
		Spec: appsv1.StatefulSetSpec{
			Replicas:        ptr.To(w.replicas),
			Selector:        &metav1.LabelSelector{MatchLabels: sel},
			ServiceName:     w.headlessName(o),
			MinReadySeconds: minReadySeconds,
			UpdateStrategy:  appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(w.labels), Annotations: w.podAnnotations},
				Spec: corev1.PodSpec{
					Containers:                    withPreStop(append([]corev1.Container{main}, cloneContainers(w.sidecars)...)),
					Volumes:                       w.volumes,
					ImagePullSecrets:              w.imagePullSecrets,
					ServiceAccountName:            w.serviceAccountName,
					SecurityContext:               w.securityContext,
					EnableServiceLinks:            w.enableServiceLinks,
					NodeSelector:                  w.nodeSelector,
					TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriodSeconds),
					TopologySpreadConstraints:     topologySpread(w.replicas, sel),
				},
			},
		},
	}
	if w.storage != nil {
		class := w.storage.StorageClassName
		if class == "" {
			class = defaultStorageClass
		}
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: vct},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(class),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: w.storage.Size,
				}},
			},
		}}
	}
	return sts
}

// secretRefs turns Secret names into pod imagePullSecrets.
func secretRefs(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}
