package kinds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The luxfi operator's LuxIndexer, LuxExplorer, LuxGateway and LuxMPC, built as it
// materializes them (src/controller.rs at 552ce16; luxnetwork.md §9): its object names,
// labels (which are also its selectors, so a taken-over Deployment or StatefulSet is applied
// in place), ports, args, volumes and defaults (src/crd.rs). Where it was wrong, this
// operator is right and says so: the RPC and indexer backends use the ports the referenced
// LuxNetwork and LuxIndexer declare (it hard-coded 9630 and 4000, and sent the gateway to
// port 80), a gateway's config change rolls its pods (it never restarted them), a custom
// route serves every method it lists (it served the first), and routeCount counts the
// routes (it was 7 whatever the network). Fields it declared but never read are reported in
// the FieldsNotMaterialized condition, never acted on by guesswork.

// The luxfi Kinds' GroupKinds, for Context.Inputs.
var (
	gkLuxNetwork = schema.GroupKind{Group: luxnetwork.Group, Kind: "LuxNetwork"}
	gkLuxChain   = schema.GroupKind{Group: luxnetwork.Group, Kind: "LuxChain"}
	gkLuxIndexer = schema.GroupKind{Group: luxnetwork.Group, Kind: "LuxIndexer"}

	gvkLuxNetwork = luxnetwork.GroupVersion.WithKind("LuxNetwork")
	gvkLuxChain   = luxnetwork.GroupVersion.WithKind("LuxChain")
	gvkLuxIndexer = luxnetwork.GroupVersion.WithKind("LuxIndexer")

	luxIndexerOwns  = []schema.GroupVersionKind{gvkDeployment, gvkService, gvkStatefulSet}
	luxExplorerOwns = []schema.GroupVersionKind{gvkDeployment, gvkService, gvkIngress}
	luxGatewayOwns  = []schema.GroupVersionKind{gvkDeployment, gvkConfigMap, gvkService, gvkIngress}
	luxMPCOwns      = []schema.GroupVersionKind{gvkStatefulSet, gvkService}
)

// The luxfi defaults (src/crd.rs).
const (
	luxIndexerImage      = "registry.digitalocean.com/hanzo/lux-indexer"
	luxIndexerPort       = 4000
	luxIndexerPoll       = 2
	luxIndexerPGImage    = "postgres:16-alpine"
	luxIndexerPGSize     = "20Gi"
	luxExplorerImage     = "ghcr.io/blockscout/frontend"
	luxExplorerReplicas  = 2
	luxExplorerPort      = 3000
	luxGatewayImage      = "devopsfaith/krakend"
	luxGatewayTag        = "2.7"
	luxGatewayReplicas   = 2
	luxGatewayPort       = 8080
	luxMPCImage          = "ghcr.io/luxfi/mpc-api:latest"
	luxMPCNodes          = 3
	luxMPCThreshold      = 2
	luxMPCP2PPort        = 9651
	luxMPCAPIPort        = 8081
	luxMPCStorage        = "10Gi"
	luxMPCSecret         = "mpc-secrets"
	luxDefaultHTTPPort   = 9650
	luxIndexerRPCPort    = 9630             // what the luxfi operator hard-coded when the network is unknown
	luxPullSecret        = "registry-hanzo" //nolint:gosec // G101: the pull Secret's name, not its data
	luxGatewayConfigHash = "lux.network/config-hash"
	luxRoleLabel         = "lux.network/role"
)

// luxAppLabels are the luxfi operator's labels (and selector) of an indexer, explorer or
// gateway.
func luxAppLabels(app, name, component string) map[string]string {
	return map[string]string{
		LabelName:      app,
		LabelInstance:  name,
		LabelComponent: component,
		LabelManagedBy: luxnetwork.ManagedBy,
	}
}

func luxImage(img *luxnetwork.AppImageSpec, repo, tag string) (string, corev1.PullPolicy) {
	i := luxnetwork.AppImageSpec{}
	if img != nil {
		i = *img
	}
	return or(i.Repository, repo) + ":" + or(i.Tag, tag), corev1.PullPolicy(or(i.PullPolicy, string(corev1.PullIfNotPresent)))
}

func httpGetProbe(path string, port int32, delay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
		InitialDelaySeconds: delay, PeriodSeconds: period,
	}
}

func orInt32(a, b int32) int32 {
	if a != 0 {
		return a
	}
	return b
}

// unknownField is the Halt of a field the luxfi Kind does not declare.
func unknownField(o owner, unknown string) error {
	return invalidSpec("%s %s/%s: spec: %s: not a field of the luxfi %s, so nothing would act on it; remove it", o.Kind, o.Namespace, o.Name, strings.TrimPrefix(unknown, "json: "), o.Kind)
}

// decodeInput decodes an unstructured input into a typed luxfi CR.
func decodeInput[T any](u *unstructured.Unstructured) (*T, bool) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, false
	}
	return out, true
}

// luxNetworkHTTP is the http port of LuxNetwork name among the inputs: its spec.ports.http,
// else the luxfi default 9650; fallback when the network is not among them.
func luxNetworkHTTP(c Context, ns, name string, fallback int32) int32 {
	for _, u := range c.InputsOf(gkLuxNetwork, ns) {
		if u.GetName() != name {
			continue
		}
		if n, ok := decodeInput[luxnetwork.LuxNetwork](u); ok {
			if n.Spec.Ports != nil && n.Spec.Ports.HTTP != 0 {
				return n.Spec.Ports.HTTP
			}
			return luxDefaultHTTPPort
		}
	}
	return fallback
}

// luxIndexerPortOf is the port of LuxIndexer name among the inputs, else 4000 (the luxfi
// operator always used 4000).
func luxIndexerPortOf(c Context, ns, name string) int32 {
	for _, u := range c.InputsOf(gkLuxIndexer, ns) {
		if u.GetName() != name {
			continue
		}
		if x, ok := decodeInput[luxnetwork.LuxIndexer](u); ok && x.Spec.Port != 0 {
			return x.Spec.Port
		}
	}
	return luxIndexerPort
}

// ---------------------------------------------------------------------------------------
// LuxIndexer

// buildLuxIndexer renders Deployment <cr>-indexer (container indexer, args -chain
// cchain|pchain|xchain, env DATABASE_URL, RPC_ENDPOINT, WS_ENDPOINT, CHAIN_ID, CHAIN_ALIAS,
// HTTP_PORT, POLL_INTERVAL and the feature flags, /health probes, pull secret registry-hanzo),
// ClusterIP Service <cr>-indexer, and with database.managed (default) StatefulSet <cr>-pg
// (postgres, claim pg-data, Retain) with headless Service <cr>-pg. The RPC endpoint defaults
// to validator 0 of networkRef on the network's http port.
//
//nolint:funlen // one object after the other, as the luxfi operator writes them
func buildLuxIndexer(cr *luxnetwork.LuxIndexer, o owner, c Context) (built, error) {
	s := &cr.Spec
	switch {
	case s.Unknown != "":
		return nil, unknownField(o, s.Unknown)
	case s.NetworkRef == "":
		return nil, invalidSpec("%s %s/%s: spec.networkRef is required", o.Kind, o.Namespace, o.Name)
	case s.ChainAlias == "":
		return nil, invalidSpec("%s %s/%s: spec.chainAlias is required", o.Kind, o.Namespace, o.Name)
	}
	labels := luxAppLabels("lux-indexer", o.Name, "indexer")
	labels["lux.network/chain"] = s.ChainAlias
	port := orInt32(s.Port, luxIndexerPort)
	chain := or(s.BlockchainID, "C")
	rpcPort := luxNetworkHTTP(c, o.Namespace, s.NetworkRef, luxIndexerRPCPort)
	node := fmt.Sprintf("%s-0.%s-headless.%s.svc:%d", s.NetworkRef, s.NetworkRef, o.Namespace, rpcPort)
	rpc := or(s.RPCEndpoint, "http://"+node+"/ext/bc/"+chain+"/rpc")
	ws := or(s.WSEndpoint, "ws://"+node+"/ext/bc/"+chain+"/ws")
	db := luxnetwork.IndexerDatabaseSpec{}
	if s.Database != nil {
		db = *s.Database
	}
	managed := db.Managed == nil || *db.Managed
	dbName := or(db.Name, "indexer_"+strings.ReplaceAll(s.ChainAlias, "-", "_"))
	dbURL := or(db.URL, "postgres://localhost:5432/indexer")
	if managed {
		dbURL = fmt.Sprintf("postgres://indexer:indexer@%s-pg.%s.svc:5432/%s?sslmode=disable", o.Name, o.Namespace, dbName)
	}
	env := []corev1.EnvVar{
		{Name: "DATABASE_URL", Value: dbURL},
		{Name: "RPC_ENDPOINT", Value: rpc},
		{Name: "WS_ENDPOINT", Value: ws},
		{Name: "CHAIN_ID", Value: strconv.FormatInt(s.ChainID, 10)},
		{Name: "CHAIN_ALIAS", Value: s.ChainAlias},
		{Name: "HTTP_PORT", Value: strconv.Itoa(int(port))},
		{Name: "POLL_INTERVAL", Value: strconv.FormatInt(deref64(s.PollInterval, luxIndexerPoll), 10)},
	}
	if s.TraceEnabled == nil || *s.TraceEnabled {
		env = append(env, corev1.EnvVar{Name: "TRACE_ENABLED", Value: "true"})
	}
	if s.DefiIndexing {
		env = append(env, corev1.EnvVar{Name: "DEFI_INDEXING", Value: "true"})
	}
	if s.NFTIndexing {
		env = append(env, corev1.EnvVar{Name: "NFT_INDEXING", Value: "true"})
	}
	res, err := luxnetwork.Resources(s.Resources)
	if err != nil {
		return nil, refuse(o, err.Error(), "not a quantity")
	}
	chainType := "cchain" // C and every EVM chain
	switch strings.ToLower(s.ChainAlias) {
	case "p", "pchain":
		chainType = "pchain"
	case "x", "xchain":
		chainType = "xchain"
	}
	image, pull := luxImage(s.Image, luxIndexerImage, "latest")
	name := o.Name + "-indexer"
	// The luxfi selector is a subset of its Postgres pod's labels, so its Service also sent
	// port 4000 to Postgres: the indexer pods carry a role label the Service selects on (the
	// Deployment's selector is immutable and stays).
	podLabels := maps.Clone(labels)
	podLabels[luxRoleLabel] = "indexer"
	dep := &appsv1.Deployment{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(deref32(s.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "indexer", Image: image, ImagePullPolicy: pull,
						Args:           []string{"-chain", chainType},
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
						Env:            env,
						Resources:      *res,
						LivenessProbe:  httpGetProbe("/health", port, 30, 30),
						ReadinessProbe: httpGetProbe("/health", port, 10, 10),
					}},
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: luxPullSecret}},
				},
			},
		},
	}
	children := []child{
		{dep, gvkDeployment},
		{luxClusterIP(o, name, labels, podLabels, port, port, corev1.ServiceTypeClusterIP), gvkService},
	}
	if managed {
		pg, svc, err := luxIndexerPostgres(o, labels, &db, dbName)
		if err != nil {
			return nil, err
		}
		children = append(children, child{pg, gvkStatefulSet}, child{svc, gvkService})
	}
	return objects(children...)
}

func luxClusterIP(o owner, name string, labels, selector map[string]string, port, target int32, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: maps.Clone(selector),
			Ports:    []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(target)}},
		},
	}
}

func luxIndexerPostgres(o owner, parent map[string]string, db *luxnetwork.IndexerDatabaseSpec, dbName string) (*appsv1.StatefulSet, *corev1.Service, error) {
	name := o.Name + "-pg"
	labels := maps.Clone(parent)
	labels["component"] = "postgresql" // the luxfi key, beside app.kubernetes.io/component
	size, err := resource.ParseQuantity(or(db.StorageSize, luxIndexerPGSize))
	if err != nil {
		return nil, nil, refuse(o, "spec.database.storageSize", err.Error())
	}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pg-data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if db.StorageClass != "" {
		claim.Spec.StorageClassName = ptr.To(db.StorageClass)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(1)),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "postgres", Image: or(db.Image, luxIndexerPGImage),
					Ports: []corev1.ContainerPort{{Name: "pg", ContainerPort: 5432}},
					Env: []corev1.EnvVar{
						{Name: "POSTGRES_DB", Value: dbName},
						{Name: "POSTGRES_USER", Value: "indexer"},
						{Name: "POSTGRES_PASSWORD", Value: "indexer"},
						{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "pg-data", MountPath: "/var/lib/postgresql/data"}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-U", "indexer"}}},
						InitialDelaySeconds: 5, PeriodSeconds: 10,
					},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  maps.Clone(labels),
			Ports:     []corev1.ServicePort{{Name: "pg", Port: 5432, TargetPort: intstr.FromInt32(5432)}},
		},
	}
	return sts, svc, nil
}

// luxIndexerStatus is the luxfi LuxIndexer status: Ready once the indexer serves, else
// Syncing (Error when Degraded), its API endpoint and whether its database is up.
func luxIndexerStatus(cr *luxnetwork.LuxIndexer, obs Observed) StatusFields {
	s := &cr.Spec
	st := StatusFields{Phase: luxAppPhase(obs, "Syncing"), Fields: map[string]any{
		"apiEndpoint":   fmt.Sprintf("http://%s-indexer.%s.svc:%d", cr.Name, cr.Namespace, orInt32(s.Port, luxIndexerPort)),
		"databaseReady": obs.Ready,
	}}
	if s.Storage != nil {
		st.NotMaterialized = append(st.NotMaterialized, "spec.storage (the luxfi operator created no KV claim and the indexer image names no data path for one)")
	}
	if s.ContractVerification != nil {
		st.NotMaterialized = append(st.NotMaterialized, "spec.contractVerification (no flag or variable of the indexer image turns it on or off; the luxfi operator passed nothing)")
	}
	return st
}

// luxAppPhase maps the computed phase to the luxfi app vocabulary: Ready, Error, else pending.
func luxAppPhase(obs Observed, pending v1.Phase) v1.Phase {
	switch {
	case obs.Ready:
		return "Ready"
	case obs.Phase == v1.PhaseDegraded:
		return "Error"
	default:
		return pending
	}
}

// ---------------------------------------------------------------------------------------
// LuxExplorer

// buildLuxExplorer renders Deployment <cr>-explorer (container explorer, env CHAIN_<i>_NAME,
// CHAIN_<i>_INDEXER, CHAIN_COUNT, NETWORK_NAME, LOGO_URL; liveness GET /; pull secret
// registry-hanzo), ClusterIP Service <cr>-explorer and, with ingress, Ingress <cr>-explorer
// (class annotation, optional TLS).
func buildLuxExplorer(cr *luxnetwork.LuxExplorer, o owner, c Context) (built, error) {
	s := &cr.Spec
	if s.Unknown != "" {
		return nil, unknownField(o, s.Unknown)
	}
	labels := luxAppLabels("lux-explorer", o.Name, "explorer")
	port := orInt32(s.Port, luxExplorerPort)
	var env []corev1.EnvVar
	for i, r := range s.IndexerRefs {
		if r.IndexerName == "" {
			return nil, invalidSpec("%s %s/%s: spec.indexerRefs[%d].indexerName is required", o.Kind, o.Namespace, o.Name, i)
		}
		env = append(env,
			corev1.EnvVar{Name: fmt.Sprintf("CHAIN_%d_NAME", i), Value: r.DisplayName},
			corev1.EnvVar{Name: fmt.Sprintf("CHAIN_%d_INDEXER", i), Value: fmt.Sprintf("http://%s-indexer.%s.svc:%d", r.IndexerName, o.Namespace, luxIndexerPortOf(c, o.Namespace, r.IndexerName))})
	}
	env = append(env, corev1.EnvVar{Name: "CHAIN_COUNT", Value: strconv.Itoa(len(s.IndexerRefs))})
	if b := s.Branding; b != nil {
		env = append(env, corev1.EnvVar{Name: "NETWORK_NAME", Value: b.NetworkName})
		if b.LogoURL != "" {
			env = append(env, corev1.EnvVar{Name: "LOGO_URL", Value: b.LogoURL})
		}
	}
	res, err := luxnetwork.Resources(s.Resources)
	if err != nil {
		return nil, refuse(o, err.Error(), "not a quantity")
	}
	image, pull := luxImage(s.Image, luxExplorerImage, "latest")
	name := o.Name + "-explorer"
	dep := &appsv1.Deployment{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(deref32(s.Replicas, luxExplorerReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "explorer", Image: image, ImagePullPolicy: pull,
						Ports:         []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
						Env:           env,
						Resources:     *res,
						LivenessProbe: httpGetProbe("/", port, 15, 30),
					}},
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: luxPullSecret}},
				},
			},
		},
	}
	children := []child{{dep, gvkDeployment}, {luxClusterIP(o, name, labels, labels, port, port, corev1.ServiceTypeClusterIP), gvkService}}
	if in := s.Ingress; in != nil {
		if in.Host == "" {
			return nil, invalidSpec("%s %s/%s: spec.ingress.host is required", o.Kind, o.Namespace, o.Name)
		}
		ann := maps.Clone(in.Annotations)
		if ann == nil {
			ann = map[string]string{}
		}
		ann["kubernetes.io/ingress.class"] = or(in.IngressClass, "nginx")
		children = append(children, child{luxIngress(o, name, labels, ann, in.Host, in.TLSSecret, name, port), gvkIngress})
	}
	return objects(children...)
}

func luxIngress(o owner, name string, labels, ann map[string]string, host, tlsSecret, svc string, port int32) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}},
			}}}},
		}}},
	}
	ing.Annotations = ann
	if tlsSecret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: tlsSecret}}
	}
	return ing
}

func luxExplorerStatus(cr *luxnetwork.LuxExplorer, obs Observed) StatusFields {
	s := &cr.Spec
	st := StatusFields{Phase: luxAppPhase(obs, v1.PhaseCreating), Fields: map[string]any{"readyReplicas": int64(obs.ReadyReplicas)}}
	if s.Ingress != nil {
		st.Fields["url"] = "https://" + s.Ingress.Host
	}
	if s.NetworkRef != "" {
		st.NotMaterialized = append(st.NotMaterialized, "spec.networkRef (the explorer reads its indexers, never the network)")
	}
	for i, r := range s.IndexerRefs {
		if r.Color != "" || r.Default {
			st.NotMaterialized = append(st.NotMaterialized, fmt.Sprintf("spec.indexerRefs[%d].color/default (the explorer image reads no variable for them)", i))
		}
	}
	if s.Branding != nil && s.Branding.PrimaryColor != "" {
		st.NotMaterialized = append(st.NotMaterialized, "spec.branding.primaryColor (the explorer image reads no variable for it)")
	}
	return st
}

// ---------------------------------------------------------------------------------------
// LuxGateway

// buildLuxGateway renders ConfigMap <cr>-gateway-config (krakend.json), Deployment
// <cr>-gateway (container krakend running that file, liveness /__health, the config's hash
// on the pod template), Service <cr>-gateway (port 80 to the gateway port, serviceType) and,
// with tls, Ingress <cr>-gateway.
func buildLuxGateway(cr *luxnetwork.LuxGateway, o owner, c Context) (built, error) {
	s := &cr.Spec
	switch {
	case s.Unknown != "":
		return nil, unknownField(o, s.Unknown)
	case s.NetworkRef == "":
		return nil, invalidSpec("%s %s/%s: spec.networkRef is required", o.Kind, o.Namespace, o.Name)
	case s.Host == "":
		return nil, invalidSpec("%s %s/%s: spec.host is required", o.Kind, o.Namespace, o.Name)
	}
	cfg, _ := luxKrakenD(o, s, c)
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: encode krakend.json: %w", o.Kind, o.Namespace, o.Name, err)
	}
	labels := luxAppLabels("lux-gateway", o.Name, "gateway")
	port := orInt32(s.Port, luxGatewayPort)
	cmName := o.Name + "-gateway-config"
	cm := &corev1.ConfigMap{ObjectMeta: o.meta(cmName, maps.Clone(labels)), Data: map[string]string{"krakend.json": string(raw)}}
	sum := sha256.Sum256(raw)
	res, err := luxnetwork.Resources(s.Resources)
	if err != nil {
		return nil, refuse(o, err.Error(), "not a quantity")
	}
	image, pull := luxImage(s.Image, luxGatewayImage, luxGatewayTag)
	name := o.Name + "-gateway"
	dep := &appsv1.Deployment{
		ObjectMeta: o.meta(name, maps.Clone(labels)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(deref32(s.Replicas, luxGatewayReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: map[string]string{luxGatewayConfigHash: hex.EncodeToString(sum[:16])}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "krakend", Image: image, ImagePullPolicy: pull,
						Ports:         []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
						Command:       []string{"/usr/bin/krakend"},
						Args:          []string{"run", "-c", "/etc/krakend/krakend.json"},
						VolumeMounts:  []corev1.VolumeMount{{Name: "config", MountPath: "/etc/krakend", ReadOnly: true}},
						Resources:     *res,
						LivenessProbe: httpGetProbe("/__health", port, 10, 15),
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cmName}}}}},
				},
			},
		},
	}
	children := []child{{dep, gvkDeployment}, {cm, gvkConfigMap},
		{luxClusterIP(o, name, labels, labels, 80, port, corev1.ServiceType(or(s.ServiceType, string(corev1.ServiceTypeClusterIP)))), gvkService}}
	if t := s.TLS; t != nil {
		if t.SecretName == "" {
			return nil, invalidSpec("%s %s/%s: spec.tls.secretName is required", o.Kind, o.Namespace, o.Name)
		}
		ann := map[string]string{"kubernetes.io/ingress.class": "nginx"}
		if t.CertManager && t.Issuer != "" {
			ann["cert-manager.io/cluster-issuer"] = t.Issuer
		}
		children = append(children, child{luxIngress(o, name, labels, ann, s.Host, t.SecretName, name, 80), gvkIngress})
	}
	return objects(children...)
}

// luxKrakenD is the gateway's KrakenD configuration and its chain routes.
func luxKrakenD(o owner, s *luxnetwork.LuxGatewaySpec, c Context) (map[string]any, map[string]any) {
	endpoints := []any{}
	chains := map[string]any{}
	route := func(path, method, host, pattern string, extra map[string]any) {
		e := map[string]any{"endpoint": path, "backend": []any{map[string]any{"url_pattern": pattern, "host": []any{host}, "encoding": "no-op"}}}
		if method != "" {
			e["method"] = method
		}
		maps.Copy(e, extra)
		endpoints = append(endpoints, e)
	}
	if s.AutoRoutes == nil || *s.AutoRoutes {
		rpc := fmt.Sprintf("http://%s-headless.%s.svc:%d", s.NetworkRef, o.Namespace, luxNetworkHTTP(c, o.Namespace, s.NetworkRef, luxDefaultHTTPPort))
		rate, burst := int64(100), int64(200)
		if r := s.RateLimit; r != nil {
			rate, burst = deref64(r.RequestsPerSecond, rate), deref64(r.Burst, burst)
		}
		route("/ext/bc/C/rpc", "POST", rpc, "/ext/bc/C/rpc", map[string]any{"extra_config": map[string]any{"qos/ratelimit/router": map[string]any{"max_rate": rate, "capacity": burst}}})
		route("/ext/bc/C/ws", "", rpc, "/ext/bc/C/ws", nil)
		route("/ext/bc/X", "POST", rpc, "/ext/bc/X", nil)
		route("/ext/bc/P", "POST", rpc, "/ext/bc/P", nil)
		route("/ext/info", "POST", rpc, "/ext/info", nil)
		route("/ext/health", "", rpc, "/ext/health", nil)
		chains["C"], chains["X"], chains["P"] = "/ext/bc/C/rpc", "/ext/bc/X", "/ext/bc/P"
		for _, ref := range s.IndexerRefs {
			route("/api/indexer/"+ref, "", fmt.Sprintf("http://%s-indexer.%s.svc:%d", ref, o.Namespace, luxIndexerPortOf(c, o.Namespace, ref)), "/", nil)
		}
	}
	for _, r := range s.CustomRoutes {
		methods := r.Methods
		if len(methods) == 0 {
			methods = []string{"GET", "POST"}
		}
		for _, m := range methods {
			e := map[string]any{"endpoint": r.Path, "method": m, "backend": []any{map[string]any{
				"url_pattern": r.Path, "host": []any{r.Backend}, "encoding": "no-op", "timeout": fmt.Sprintf("%ds", deref64(r.Timeout, 30)),
			}}}
			endpoints = append(endpoints, e)
		}
	}
	cors := luxnetwork.GatewayCORSSpec{}
	if s.CORS != nil {
		cors = *s.CORS
	}
	list := func(v []string, def ...string) []any {
		if len(v) == 0 {
			v = def
		}
		out := make([]any, 0, len(v))
		for _, x := range v {
			out = append(out, x)
		}
		return out
	}
	return map[string]any{
		"$schema":   "https://www.krakend.io/schema/v2.7/krakend.json",
		"version":   int64(3),
		"name":      "Lux Gateway - " + s.Host,
		"port":      int64(orInt32(s.Port, luxGatewayPort)),
		"timeout":   "30s",
		"cache_ttl": "0s",
		"extra_config": map[string]any{"security/cors": map[string]any{
			"allow_origins":  list(cors.AllowedOrigins, "*"),
			"allow_methods":  list(cors.AllowedMethods, "GET", "POST"),
			"allow_headers":  list(cors.AllowedHeaders, "Content-Type", "Authorization"),
			"expose_headers": []any{"Content-Length"},
			"max_age":        "12h",
		}},
		"endpoints": endpoints,
	}, chains
}

func luxGatewayStatus(cr *luxnetwork.LuxGateway, obs Observed) StatusFields {
	s := &cr.Spec
	cfg, chains := luxKrakenD(owner{Name: cr.Name, Namespace: cr.Namespace}, s, Context{})
	eps, _ := cfg["endpoints"].([]any)
	st := StatusFields{Phase: luxAppPhase(obs, v1.PhaseCreating), Fields: map[string]any{
		"routeCount":       int64(len(eps)),
		"readyReplicas":    int64(obs.ReadyReplicas),
		"externalEndpoint": "https://" + s.Host,
		"chainRoutes":      chains,
	}}
	if len(s.ExplorerRefs) > 0 {
		st.NotMaterialized = append(st.NotMaterialized, "spec.explorerRefs (the luxfi operator routed nothing to explorers; route one with customRoutes)")
	}
	if t := s.TLS; t != nil && t.CertManager && t.Issuer == "" {
		st.NotMaterialized = append(st.NotMaterialized, "spec.tls.certManager (names no issuer, so no cert-manager annotation)")
	}
	return st
}

// ---------------------------------------------------------------------------------------
// LuxMPC

// buildLuxMPC renders headless Service <cr>-mpc-headless (p2p, api; not-ready addresses
// published), Service <cr>-mpc-api (node 0 only) and StatefulSet <cr>-mpc-node (Parallel,
// init-peers writing every other node's --peer, mpcd in consensus mode with the threshold,
// node 0 also serving the API; env from secretName, databaseUrl and kvUrl overriding its
// DATABASE_URL and KV_URL; claim data, Retain).
//
//nolint:funlen // the luxfi scripts are long
func buildLuxMPC(cr *luxnetwork.LuxMPC, o owner, _ Context) (built, error) {
	s := &cr.Spec
	if s.Unknown != "" {
		return nil, unknownField(o, s.Unknown)
	}
	nodes, threshold := deref32(s.Nodes, luxMPCNodes), deref32(s.Threshold, luxMPCThreshold)
	if threshold < 1 || threshold > nodes {
		return nil, invalidSpec("%s %s/%s: spec.threshold %d must be between 1 and spec.nodes (%d)", o.Kind, o.Namespace, o.Name, threshold, nodes)
	}
	p2p, api := orInt32(s.P2PPort, luxMPCP2PPort), orInt32(s.APIPort, luxMPCAPIPort)
	secret := or(s.SecretName, luxMPCSecret)
	labels := map[string]string{"app": o.Name + "-mpc-node", "lux.network/mpc": o.Name}
	headless := o.Name + "-mpc-headless"
	stsName := o.Name + "-mpc-node"
	q := func(field, v, def string) (resource.Quantity, error) {
		x, err := resource.ParseQuantity(or(v, def))
		if err != nil {
			return x, refuse(o, "spec."+field, err.Error())
		}
		return x, nil
	}
	var qs [5]resource.Quantity
	for i, f := range []struct{ field, v, def string }{
		{"cpuRequest", s.CPURequest, "200m"}, {"memoryRequest", s.MemoryRequest, "512Mi"},
		{"cpuLimit", s.CPULimit, "1000m"}, {"memoryLimit", s.MemoryLimit, "1Gi"}, {"storage", s.Storage, luxMPCStorage},
	} {
		x, err := q(f.field, f.v, f.def)
		if err != nil {
			return nil, err
		}
		qs[i] = x
	}
	podName := corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	fromSecret := func(env, key, override string) corev1.EnvVar {
		if override != "" {
			return corev1.EnvVar{Name: env, Value: override}
		}
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: ptr.To(false)}}}
	}
	// The luxfi scripts, byte for byte, so a taken-over StatefulSet keeps its pod template.
	initScript := fmt.Sprintf(`INDEX=$(echo $POD_NAME | rev | cut -d- -f1 | rev)
TOTAL=%d
echo -n "" > /config/peers
for i in $(seq 0 $((TOTAL - 1))); do
  if [ "$i" != "$INDEX" ]; then
    echo -n " --peer node${i}@%s-${i}.%s.$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace).svc:%d" >> /config/peers
  fi
done`, nodes, stsName, headless, p2p)
	runScript := fmt.Sprintf(`INDEX=$(echo $POD_NAME | rev | cut -d- -f1 | rev)
PEERS=$(cat /config/peers)
CMD="mpcd start --mode consensus --node-id node${INDEX} --listen :%d --data /data/mpc --threshold %d $PEERS"
if [ "$INDEX" = "0" ]; then
  CMD="$CMD --api-listen :%d --api-db $DATABASE_URL --api-kv $KV_URL --jwt-secret $JWT_SECRET"
fi
exec sh -c "$CMD"`, p2p, threshold, api)
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qs[4]}},
		},
	}
	if s.StorageClass != "" {
		claim.Spec.StorageClassName = ptr.To(s.StorageClass)
	}
	healthz := func(delay int32) *corev1.Probe {
		p := httpGetProbe("/healthz", api, delay, delay)
		p.FailureThreshold = 3
		return p
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: o.meta(stsName, maps.Clone(labels)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(nodes),
			Selector:            &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			ServiceName:         headless,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{
						Name: "init-peers", Image: "alpine:3.20",
						Command:      []string{"sh", "-c", initScript},
						Env:          []corev1.EnvVar{podName},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}},
					}},
					Containers: []corev1.Container{{
						Name: "mpc-node", Image: or(s.Image, luxMPCImage), ImagePullPolicy: corev1.PullPolicy(or(s.ImagePullPolicy, string(corev1.PullIfNotPresent))),
						Command: []string{"sh", "-c", runScript},
						Env: []corev1.EnvVar{podName,
							fromSecret("DATABASE_URL", "DATABASE_URL", s.DatabaseURL),
							fromSecret("KV_URL", "KV_URL", s.KVURL),
							fromSecret("JWT_SECRET", "jwt-secret", ""),
							fromSecret("BADGER_PASSWORD", "mpc-password", ""),
						},
						Ports: []corev1.ContainerPort{{Name: "p2p", ContainerPort: p2p}, {Name: "api", ContainerPort: api}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "data", MountPath: "/data/mpc"},
							{Name: "config", MountPath: "/config"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: qs[0], corev1.ResourceMemory: qs[1]},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: qs[2], corev1.ResourceMemory: qs[3]},
						},
						LivenessProbe:  healthz(30),
						ReadinessProbe: healthz(10),
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	hs := &corev1.Service{
		ObjectMeta: o.meta(headless, maps.Clone(labels)),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: maps.Clone(labels),
			Ports: []corev1.ServicePort{{Name: "p2p", Port: p2p}, {Name: "api", Port: api}},
		},
	}
	apiSvc := &corev1.Service{
		ObjectMeta: o.meta(o.Name+"-mpc-api", maps.Clone(labels)),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": stsName, "statefulset.kubernetes.io/pod-name": stsName + "-0"},
			Ports:    []corev1.ServicePort{{Name: "api", Port: api, TargetPort: intstr.FromInt32(api)}},
		},
	}
	return objects(child{sts, gvkStatefulSet}, child{hs, gvkService}, child{apiSvc, gvkService})
}

func luxMPCStatus(cr *luxnetwork.LuxMPC, obs Observed) StatusFields {
	s := &cr.Spec
	phase := v1.Phase("Provisioning")
	switch {
	case obs.Ready:
		phase = "Ready"
	case obs.Phase == v1.PhaseDegraded:
		phase = v1.PhaseDegraded
	}
	st := StatusFields{Phase: phase, Fields: map[string]any{
		"readyNodes":  int64(obs.ReadyReplicas),
		"totalNodes":  int64(deref32(s.Nodes, luxMPCNodes)),
		"apiEndpoint": fmt.Sprintf("http://%s-mpc-api.%s.svc:%d", cr.Name, cr.Namespace, orInt32(s.APIPort, luxMPCAPIPort)),
	}}
	if s.Hostname != "" {
		st.Fields["hostname"] = s.Hostname
	}
	notes := []struct {
		set  bool
		note string
	}{
		{s.DeployPostgres != nil || s.DeployValkey != nil, "spec.deployPostgres/deployValkey (the luxfi operator deployed neither; the nodes read DATABASE_URL and KV_URL from secretName)"},
		{s.Hostname != "" || s.TLSSecret != "" || s.ClusterIssuer != "", "spec.hostname/tlsSecret/clusterIssuer (the luxfi operator created no Ingress; expose <cr>-mpc-api through an Ingress or Gateway)"},
		{s.Backup != nil, "spec.backup (the luxfi operator ran no backup; key shares stay on the Retain claims)"},
		{s.DashboardImage != "" || s.DashboardAPIURL != "", "spec.dashboardImage/dashboardApiUrl (the luxfi operator deployed no dashboard)"},
		{s.IAMURL != "" || s.IAMClientID != "", "spec.iamUrl/iamClientId (no mpcd flag takes them; the luxfi operator passed none)"},
	}
	for _, n := range notes {
		if n.set {
			st.NotMaterialized = append(st.NotMaterialized, n.note)
		}
	}
	return st
}

// ---------------------------------------------------------------------------------------
// LuxChain, and the LuxNetwork that serves it

// buildLuxChain materializes nothing itself: its network does (luxnetwork.md §8-9: the luxfi
// operator appended {blockchainId, alias or name} to the network's spec.chains). This
// operator never edits the network's spec (git owns it): the LuxNetwork's build reads the
// LuxChains naming it, tracks each, aliases it and, with vm.chainConfig, projects its own
// config.json. A LuxChain without blockchainId stays Pending, as with the luxfi operator.
func buildLuxChain(cr *luxnetwork.LuxChain, o owner, c Context) (built, error) {
	s := &cr.Spec
	switch {
	case s.Unknown != "":
		return nil, unknownField(o, s.Unknown)
	case s.NetworkRef == "":
		return nil, invalidSpec("%s %s/%s: spec.networkRef is required", o.Kind, o.Namespace, o.Name)
	case s.BlockchainID == "":
		return nil, &Halt{Phase: v1.PhasePending, Reason: "NoBlockchainID",
			Message: fmt.Sprintf("%s %s/%s: no spec.blockchainId yet; LuxNetwork %s serves the chain once it is set", o.Kind, o.Namespace, o.Name, s.NetworkRef)}
	case s.VM != nil && s.VM.ChainConfig != nil && !json.Valid(s.VM.ChainConfig.Raw):
		return nil, invalidSpec("%s %s/%s: spec.vm.chainConfig is not JSON", o.Kind, o.Namespace, o.Name)
	}
	for _, u := range c.InputsOf(gkLuxNetwork, o.Namespace) {
		if u.GetName() == s.NetworkRef {
			return nil, nil
		}
	}
	return nil, &Halt{Phase: v1.PhasePending, Reason: "NetworkNotFound",
		Message: fmt.Sprintf("%s %s/%s: LuxNetwork %s/%s does not exist; it serves the chain once it does", o.Kind, o.Namespace, o.Name, o.Namespace, s.NetworkRef)}
}

func luxChainStatus(cr *luxnetwork.LuxChain, obs Observed) StatusFields {
	s := &cr.Spec
	st := StatusFields{Fields: map[string]any{}}
	if obs.Ready {
		st.Phase = "Active"
	}
	if s.BlockchainID != "" {
		st.Fields["blockchainId"] = s.BlockchainID
	}
	if s.ChainID != "" {
		st.Fields["chainId"] = s.ChainID
	}
	if len(s.Validators) > 0 {
		st.NotMaterialized = append(st.NotMaterialized, "spec.validators (subnet validators are P-chain transactions, not cluster objects)")
	}
	if vm := s.VM; vm != nil {
		if vm.Genesis != nil {
			st.NotMaterialized = append(st.NotMaterialized, "spec.vm.genesis (the chain's genesis is in its CreateChainTx on the P-chain)")
		}
		if vm.BinaryURL != "" || (vm.VMType != "" && vm.VMType != "evm") {
			st.NotMaterialized = append(st.NotMaterialized, "spec.vm.vmType/binaryUrl (the network's pluginSource fetches VMs, sha256-verified)")
		}
	}
	return st
}

// luxNetworkChains returns the LuxNetwork's spec with the LuxChains naming it (ready ones:
// a blockchainId set, no unknown field) appended to spec.chains in name order unless listed,
// and the per-chain config.json of those with vm.chainConfig.
func luxNetworkChains(cr *luxnetwork.LuxNetwork, c Context) (*luxnetwork.LuxNetwork, []luxChainConfig) {
	var chains []*luxnetwork.LuxChain
	for _, u := range c.InputsOf(gkLuxChain, cr.Namespace) {
		lc, ok := decodeInput[luxnetwork.LuxChain](u)
		if !ok || lc.Spec.NetworkRef != cr.Name || lc.Spec.BlockchainID == "" || lc.Spec.Unknown != "" {
			continue
		}
		chains = append(chains, lc)
	}
	if len(chains) == 0 {
		return cr, nil
	}
	slices.SortFunc(chains, func(a, b *luxnetwork.LuxChain) int { return strings.Compare(a.Name, b.Name) })
	out := cr.DeepCopy()
	var configs []luxChainConfig
	for _, lc := range chains {
		id := lc.Spec.BlockchainID
		if vm := lc.Spec.VM; vm != nil && vm.ChainConfig != nil && json.Valid(vm.ChainConfig.Raw) {
			configs = append(configs, luxChainConfig{id: id, configMap: cr.Name + "-chain-" + lc.Name, config: compactJSON(vm.ChainConfig.Raw)})
		}
		if slices.ContainsFunc(out.Spec.Chains, func(x luxnetwork.ChainRef) bool { return x.BlockchainID == id }) {
			continue
		}
		out.Spec.Chains = append(out.Spec.Chains, luxnetwork.ChainRef{BlockchainID: id, Alias: or(lc.Spec.Alias, lc.Name)})
	}
	return out, configs
}

// luxChainConfig is a LuxChain's own config.json, projected for its chain from ConfigMap
// <network>-chain-<luxchain>.
type luxChainConfig struct{ id, configMap, config string }

func compactJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func luxNetworkStatus(cr *luxnetwork.LuxNetwork, obs Observed) StatusFields {
	sf := StatusFields{Fields: map[string]any{
		"readyValidators": int64(obs.ReadyReplicas),
		"totalValidators": int64(cr.Spec.Validators),
		"networkId":       int64(cr.Spec.NetworkID),
	}}
	if sr := cr.Spec.SeedRestore; sr != nil && sr.Enabled && sr.ExpectedHash == "" && sr.ObjectStoreURL != "" {
		sf.Warnings = append(sf.Warnings, Warning{Reason: ReasonSeedRestoreUnverified, Message: fmt.Sprintf(
			"seedRestore.objectStoreUrl %s has no expectedHash: an empty data dir is seeded only if the archive matches %s.sha256; "+
				"where none is published it is unpacked unverified only when the operator allows it, else the pod stops", sr.ObjectStoreURL, sr.ObjectStoreURL)})
	}
	return sf
}

func deref64(p *int64, def int64) int64 {
	if p != nil {
		return *p
	}
	return def
}
