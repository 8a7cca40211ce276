package kinds

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// profile is what an App role materializes.
type profile int

// The profiles of the role table.
const (
	profileService profile = iota + 1
	profileDatastore
	profileIngress
	profileDelegated
	profileNoOp
)

// role is one row of the App role table.
type role struct {
	profile profile
	// engine is the forced engine of a datastore role.
	engine v1.Engine
}

// appRoles is the App role table (wire-contract §3, reference-loop-behaviors §9): the single
// source of the dispatch. Matching is case-sensitive; a role not listed is Unknown.
var appRoles = map[string]role{
	"":              {profile: profileService},
	"generic":       {profile: profileService},
	"service":       {profile: profileService},
	"llm":           {profile: profileService},
	"iam":           {profile: profileService},
	"kms":           {profile: profileService},
	"explorer":      {profile: profileService},
	"function":      {profile: profileService},
	"indexer":       {profile: profileService},
	"observability": {profile: profileService},
	"queue":         {profile: profileService},
	"spa":           {profile: profileService},
	"static":        {profile: profileService},

	"sql":       {profile: profileDatastore, engine: v1.EnginePostgreSQL},
	"kv":        {profile: profileDatastore, engine: v1.EngineValkey},
	"docdb":     {profile: profileDatastore, engine: v1.EngineDocDB},
	"s3":        {profile: profileDatastore, engine: v1.EngineS3},
	"datastore": {profile: profileDatastore, engine: v1.EngineDatastore},

	"ingress": {profile: profileIngress},

	"managedDatabase": {profile: profileDelegated},
	"base":            {profile: profileDelegated},
	"gateway":         {profile: profileDelegated},
	"dns":             {profile: profileDelegated},
	"mpc":             {profile: profileDelegated},
	"network":         {profile: profileDelegated},
	"nodeFleet":       {profile: profileDelegated},
	"luxRuntime":      {profile: profileDelegated},
	"agentDeployment": {profile: profileDelegated},
	"node":            {profile: profileDelegated},

	"chain":     {profile: profileNoOp},
	"validator": {profile: profileNoOp},
}

// AppRoles returns the roles an App may declare, for the CRD enum check.
func AppRoles() []string {
	out := make([]string, 0, len(appRoles))
	for r := range appRoles {
		out = append(out, r)
	}
	return out
}

// buildApp dispatches on spec.role. Every child is owned by the App. An unknown role, a
// delegated role and a no-op role materialize nothing and return a *Halt.
func buildApp(cr *v1.App, o owner) ([]*unstructured.Unstructured, error) {
	s := &cr.Spec
	r, ok := appRoles[s.Role]
	if !ok {
		return nil, &Halt{Phase: v1.PhaseDegraded, Reason: ReasonUnknownRole,
			Message: fmt.Sprintf("App %s/%s: role %q is not a known role; nothing is materialized", o.Namespace, o.Name, s.Role)}
	}
	switch r.profile {
	case profileService:
		if err := checkSeccomp(o, s.SecurityContext); err != nil {
			return nil, err
		}
		spec := s.ServiceSpec.DeepCopy()
		if spec.Image != nil && spec.Image.Tag == "" && s.Tag != "" {
			spec.Image.Tag = s.Tag
		}
		return buildService(o, spec)
	case profileDatastore:
		if err := checkSeccomp(o, s.SecurityContext); err != nil {
			return nil, err
		}
		db, err := appDBSpec(o, s)
		if err != nil {
			return nil, err
		}
		return buildDatastore(o, db, r.engine, cr.Labels)
	case profileIngress:
		if len(s.Domains) == 0 {
			return nil, invalidSpec("App %s/%s: role ingress needs domains", o.Namespace, o.Name)
		}
		return buildIngressKind(o, &v1.IngressKindSpec{
			Domains:          s.Domains,
			IngressClassName: s.IngressClassName,
			ClusterIssuer:    s.ClusterIssuer,
			Labels:           s.Labels,
			Annotations:      s.Annotations,
		})
	case profileDelegated:
		return nil, &Halt{Phase: v1.PhasePending, Reason: ReasonDelegated,
			Message: fmt.Sprintf("role %s is materialized by its own Kind's controller", s.Role)}
	default:
		return nil, &Halt{Phase: v1.PhasePending, Reason: ReasonNoOp,
			Message: fmt.Sprintf("role %s materializes nothing", s.Role)}
	}
}

// appServiceSpec is the ServiceSpec of an App whose role builds through the Service path;
// nil for the other roles.
func appServiceSpec(cr *v1.App) *v1.ServiceSpec {
	if r, ok := appRoles[cr.Spec.Role]; !ok || r.profile != profileService {
		return nil
	}
	return &cr.Spec.ServiceSpec
}

// appDBSpec projects an App onto the DBSpec of the datastore roles; every field that survives
// to a StatefulSet is carried.
func appDBSpec(o owner, s *v1.AppSpec) (*v1.DBSpec, error) {
	if s.Storage == nil {
		return nil, invalidSpec("App %s/%s: role %s needs storage", o.Namespace, o.Name, s.Role)
	}
	in := s.DeepCopy()
	img := in.Image
	if img != nil && img.Tag == "" && in.Tag != "" {
		img.Tag = in.Tag
	}
	return &v1.DBSpec{
		Image:                    img,
		Replicas:                 in.Replicas,
		Storage:                  *in.Storage,
		Resources:                in.Resources,
		Env:                      in.Env,
		EnvFrom:                  in.EnvFrom,
		Volumes:                  in.Volumes,
		VolumeMounts:             in.VolumeMounts,
		Command:                  in.Command,
		Args:                     in.Args,
		Sidecars:                 in.Sidecars,
		CredentialsSecret:        in.CredentialsSecret,
		KMSSecrets:               in.KMSSecrets,
		ServiceAliases:           in.ServiceAliases,
		Ports:                    in.Ports,
		ImagePullSecrets:         in.ImagePullSecrets,
		NetworkPolicy:            in.NetworkPolicy,
		ServiceMonitor:           in.ServiceMonitor,
		PartOf:                   in.PartOf,
		FSGroup:                  in.FSGroup,
		SecurityContext:          in.SecurityContext,
		ContainerSecurityContext: in.ContainerSecurityContext,
		EnableServiceLinks:       in.EnableServiceLinks,
	}, nil
}

// checkSeccomp rejects a Localhost seccomp profile without localhostProfile (the CRD rule, kept
// here for CRs that reached us without admission, e.g. `operator render`).
func checkSeccomp(o owner, sc *corev1.PodSecurityContext) error {
	if sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost &&
		(sc.SeccompProfile.LocalhostProfile == nil || *sc.SeccompProfile.LocalhostProfile == "") {
		return invalidSpec("%s %s/%s: securityContext.seccompProfile type Localhost needs localhostProfile", o.Kind, o.Namespace, o.Name)
	}
	return nil
}
