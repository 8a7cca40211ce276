package kinds

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The persistence defaults (wire-contract §2.4). ageSecret has none: empty means a plaintext
// bucket with no age block.
const (
	defaultReplicatePattern   = "**/*.db"
	defaultReplicateEndpoint  = "http://s3.hanzo.svc:9000"
	defaultReplicateRegion    = "us-east-1"
	defaultReplicateSecret    = "s3-credentials"
	defaultReplicateImage     = "ghcr.io/hanzoai/replicate:v0.5.13"
	appDBVolume               = "app-db"
	replicateConfigVolume     = "replicate-config"
	replicateConfigDir        = "/etc/replicate"
	replicateConfigKey        = "replicate.yml"
	replicateBinary           = "/usr/local/bin/replicate"
	replicateConfigHeaderLine = "# hanzoai/replicate -- SQLite WAL -> S3 (SeaweedFS).\n"
)

// persistence is a PersistenceSpec with its defaults resolved.
type persistence struct {
	v1.PersistenceSpec
	owner string
}

// resolvePersistence applies the defaults; a disabled or absent spec gives nil. The data
// directory, the bucket and (single-DB mode) the database path have no safe default, so a
// spec without them is invalid rather than guessed.
func resolvePersistence(o owner, s *v1.PersistenceSpec) (*persistence, error) {
	if s == nil || !s.Enabled {
		return nil, nil
	}
	p := &persistence{PersistenceSpec: *s.DeepCopy(), owner: o.Name}
	switch {
	case p.DataDir == "":
		return nil, invalidSpec("%s %s/%s: persistence.dataDir is required", o.Kind, o.Namespace, o.Name)
	case p.Bucket == "":
		return nil, invalidSpec("%s %s/%s: persistence.bucket is required", o.Kind, o.Namespace, o.Name)
	case !p.DirMode && p.DBPath == "":
		return nil, invalidSpec("%s %s/%s: persistence.dbPath is required unless dirMode", o.Kind, o.Namespace, o.Name)
	}
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&p.Pattern, defaultReplicatePattern)
	def(&p.S3Endpoint, defaultReplicateEndpoint)
	def(&p.S3Region, defaultReplicateRegion)
	def(&p.CredentialsSecret, defaultReplicateSecret)
	def(&p.Image, defaultReplicateImage)
	return p, nil
}

func (p *persistence) dbFile() string { return path.Join(p.DataDir, p.DBPath) }

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

func (p *persistence) env() []corev1.EnvVar {
	env := []corev1.EnvVar{
		secretEnv("S3_ACCESS_KEY_ID", p.CredentialsSecret, "access-key"),
		secretEnv("S3_SECRET_ACCESS_KEY", p.CredentialsSecret, "secret-key"),
	}
	if p.AgeSecret != "" {
		env = append(env,
			secretEnv("AGE_IDENTITY", p.AgeSecret, "identity"),
			secretEnv("AGE_RECIPIENT", p.AgeSecret, "recipients"))
	}
	return env
}

func (p *persistence) mounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: appDBVolume, MountPath: p.DataDir},
		{Name: replicateConfigVolume, MountPath: replicateConfigDir, ReadOnly: true},
	}
}

func (p *persistence) configPath() string { return path.Join(replicateConfigDir, replicateConfigKey) }

// sidecar streams the WAL; it never gets the main container's security context.
func (p *persistence) sidecar() corev1.Container {
	return corev1.Container{
		Name:            "replicate",
		Image:           p.Image,
		Command:         []string{replicateBinary},
		Args:            []string{"replicate", "-config", p.configPath()},
		Env:             p.env(),
		VolumeMounts:    p.mounts(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
}

// restoreInit restores the database before start, in single-DB mode only.
func (p *persistence) restoreInit() *corev1.Container {
	if p.DirMode {
		return nil
	}
	return &corev1.Container{
		Name:            "replicate-restore",
		Image:           p.Image,
		Command:         []string{replicateBinary},
		Args:            []string{"restore", "-config", p.configPath(), "-if-db-not-exists", "-if-replica-exists", p.dbFile()},
		Env:             p.env(),
		VolumeMounts:    p.mounts(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
}

// volumes: app-db is the claim <cr>-app-db when storage is set (the operator references it;
// it does not create it), else an emptyDir; replicate-config is the ConfigMap.
func (p *persistence) volumes(name string) []corev1.Volume {
	db := corev1.Volume{Name: appDBVolume}
	if p.Storage != nil {
		db.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-app-db"}
	} else {
		db.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	return []corev1.Volume{db, {
		Name: replicateConfigVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name + "-replicate-config"},
		}},
	}}
}

// replicateConfig is the replicate.yml document; the replica keys are kebab-case.
type replicateConfig struct {
	DBs []replicateDB `json:"dbs"`
}

type replicateDB struct {
	Path     string             `json:"path,omitempty"`
	Dir      string             `json:"dir,omitempty"`
	Pattern  string             `json:"pattern,omitempty"`
	Watch    bool               `json:"watch,omitempty"`
	Replicas []replicateReplica `json:"replicas"`
}

type replicateReplica struct {
	Type            string        `json:"type"`
	Bucket          string        `json:"bucket"`
	Path            string        `json:"path"`
	Endpoint        string        `json:"endpoint"`
	Region          string        `json:"region"`
	ForcePathStyle  bool          `json:"force-path-style"`
	AccessKeyID     string        `json:"access-key-id"`
	SecretAccessKey string        `json:"secret-access-key"`
	Age             *replicateAge `json:"age,omitempty"`
}

type replicateAge struct {
	Identities []string `json:"identities"`
	Recipients []string `json:"recipients"`
}

// config renders replicate.yml: the header comment, then the marshalled document.
func (p *persistence) config() ([]byte, error) {
	r := replicateReplica{ //nolint:gosec // G101: ${S3_*} placeholders replicate expands from the Secret's env
		Type:            "s3",
		Bucket:          p.Bucket,
		Path:            p.S3Path,
		Endpoint:        p.S3Endpoint,
		Region:          p.S3Region,
		ForcePathStyle:  p.ForcePathStyle == nil || *p.ForcePathStyle,
		AccessKeyID:     "${S3_ACCESS_KEY_ID}",
		SecretAccessKey: "${S3_SECRET_ACCESS_KEY}",
	}
	if p.AgeSecret != "" {
		r.Age = &replicateAge{Identities: []string{"${AGE_IDENTITY}"}, Recipients: []string{"${AGE_RECIPIENT}"}}
	}
	db := replicateDB{Replicas: []replicateReplica{r}}
	if p.DirMode {
		db.Dir, db.Pattern, db.Watch = p.DataDir, p.Pattern, true
	} else {
		db.Path = p.dbFile()
	}
	doc, err := yaml.Marshal(replicateConfig{DBs: []replicateDB{db}})
	if err != nil {
		return nil, err
	}
	return append([]byte(replicateConfigHeaderLine), doc...), nil
}

func replicateConfigMap(o owner, p *persistence, labels map[string]string) (*unstructured.Unstructured, error) {
	data, err := p.config()
	if err != nil {
		return nil, invalidSpec("%s %s/%s: marshal replicate.yml: %v", o.Kind, o.Namespace, o.Name, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: o.meta(o.Name+"-replicate-config", labels),
		Data:       map[string]string{replicateConfigKey: string(data)},
	}
	return toUnstructured(cm, gvkConfigMap)
}
