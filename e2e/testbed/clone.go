package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The clone storage of a full cluster: a testbed-only stand-in for a CSI driver with its
// snapshot controller, because neither runs on kwok's fake node. The CSI snapshot path
// (external-snapshotter's snapshot controller plus the csi-snapshotter sidecar) cuts
// snapshots through a CSI driver's gRPC socket, and the CSI host-path driver needs real mounts
// on a real kubelet; kwok has neither, and external-snapshotter's controller module is not
// served by this machine's module proxy. So the testbed acts both parts itself, on the host:
//
//   - the provisioner of StorageClass CloneClass: a claim of that class gets a hostPath volume
//     whose directory it creates under the cluster's dir — empty, or, for a claim whose
//     dataSource is a VolumeSnapshot, a copy of that snapshot's files (a claim from a snapshot
//     that is not ready waits, as with a CSI driver);
//   - the snapshot controller: a VolumeSnapshot (snapshot.storage.k8s.io/v1) of a bound claim of
//     that class copies the claim's directory and becomes readyToUse;
//   - the collector: a Released volume of the class is deleted with its directory; the copy of a
//     deleted snapshot is removed.
//
// With kwok no container runs, so "the pod sees the data" is observed on the host: the
// directory of the volume a claim is bound to holds the files (ClaimDir), and the pod's spec
// mounts that claim.
const (
	CloneClass       = "testbed-clone"
	CloneProvisioner = "testbed.openuniverse.dev/clone"
)

var (
	gvkVolumeSnapshot = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshot"}
	cloneOnce         sync.Mutex
	cloneRoot         string
)

// CloneStorage starts the clone storage on the local full cluster once per test binary (the
// VolumeSnapshot CRDs must be installed first) and returns the root of its directories. On a
// cluster it did not start (E2E_KUBECONFIG) the test is skipped: its volumes live on that
// cluster's nodes, not here.
func CloneStorage(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	if os.Getenv(EnvKubeconfig) != "" {
		t.Skip("the clone storage runs only on the local control plane")
	}
	cloneOnce.Lock()
	defer cloneOnce.Unlock()
	if cloneRoot != "" {
		return cloneRoot
	}
	shared.mu.Lock()
	dir := shared.dir
	shared.mu.Unlock()
	if dir == "" {
		t.Fatal("CloneStorage before FullCluster")
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	immediate := storagev1.VolumeBindingImmediate
	deletePolicy := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: CloneClass}, Provisioner: CloneProvisioner,
		VolumeBindingMode: &immediate, ReclaimPolicy: &deletePolicy}
	if err := c.Create(context.Background(), sc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create storage class %s: %v", CloneClass, err)
	}
	root := filepath.Join(dir, "clone-storage")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &cloneStorage{c: c, root: root}
	go func() {
		for {
			s.sync(context.Background())
			time.Sleep(200 * time.Millisecond)
		}
	}()
	cloneRoot = root
	return root
}

// ClaimDir is the host directory of the volume the claim is bound to ("" while unbound).
func ClaimDir(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", nil
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", err
	}
	if pv.Spec.HostPath == nil {
		return "", fmt.Errorf("volume %s of claim %s/%s is not a host path", pv.Name, namespace, name)
	}
	return pv.Spec.HostPath.Path, nil
}

// SnapshotDir is the host directory holding the copy of the snapshot with uid.
func SnapshotDir(root string, uid types.UID) string { return filepath.Join(root, "snap-"+string(uid)) }

type cloneStorage struct {
	c    client.Client
	root string
}

// sync runs the three parts once; an error leaves the object for the next pass.
func (s *cloneStorage) sync(ctx context.Context) {
	snaps := &unstructured.UnstructuredList{}
	snaps.SetGroupVersionKind(gvkVolumeSnapshot.GroupVersion().WithKind("VolumeSnapshotList"))
	if err := s.c.List(ctx, snaps); err != nil {
		return
	}
	live := map[string]bool{}
	ready := map[types.NamespacedName]types.UID{}
	for i := range snaps.Items {
		sn := &snaps.Items[i]
		live["snap-"+string(sn.GetUID())] = true
		if ok, _, _ := unstructured.NestedBool(sn.Object, "status", "readyToUse"); ok {
			ready[types.NamespacedName{Namespace: sn.GetNamespace(), Name: sn.GetName()}] = sn.GetUID()
			continue
		}
		if sn.GetDeletionTimestamp() == nil {
			s.snapshot(ctx, sn)
		}
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := s.c.List(ctx, pvcs); err != nil {
		return
	}
	for i := range pvcs.Items {
		if pvc := &pvcs.Items[i]; pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName == CloneClass &&
			pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil {
			s.provision(ctx, pvc, ready)
		}
	}
	pvs := &corev1.PersistentVolumeList{}
	if err := s.c.List(ctx, pvs); err != nil {
		return
	}
	for i := range pvs.Items {
		if pv := &pvs.Items[i]; pv.Spec.StorageClassName == CloneClass && pv.Status.Phase == corev1.VolumeReleased {
			if err := s.c.Delete(ctx, pv); err == nil || apierrors.IsNotFound(err) {
				_ = os.RemoveAll(pv.Spec.HostPath.Path)
			}
		}
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); len(n) > 5 && n[:5] == "snap-" && !live[n] {
			_ = os.RemoveAll(filepath.Join(s.root, n))
		}
	}
}

// snapshot copies the source claim's directory and marks the snapshot ready.
func (s *cloneStorage) snapshot(ctx context.Context, sn *unstructured.Unstructured) {
	src, _, _ := unstructured.NestedString(sn.Object, "spec", "source", "persistentVolumeClaimName")
	if src == "" {
		return // a pre-provisioned snapshot content: not served here
	}
	from, err := ClaimDir(ctx, s.c, sn.GetNamespace(), src)
	if err != nil || from == "" {
		return
	}
	to := SnapshotDir(s.root, sn.GetUID())
	if err := copyDir(from, to); err != nil {
		_ = os.RemoveAll(to)
		return
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: sn.GetNamespace(), Name: src}, pvc); err != nil {
		return
	}
	size := pvc.Status.Capacity[corev1.ResourceStorage]
	status := map[string]any{
		"readyToUse":   true,
		"creationTime": time.Now().UTC().Format(time.RFC3339),
		"restoreSize":  size.String(),
	}
	if err := unstructured.SetNestedMap(sn.Object, status, "status"); err != nil {
		return
	}
	_ = s.c.Status().Update(ctx, sn)
}

// provision creates the volume of a claim of the clone class, pre-bound to it.
func (s *cloneStorage) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, ready map[types.NamespacedName]types.UID) {
	name := "clone-" + string(pvc.UID)
	if err := s.c.Get(ctx, client.ObjectKey{Name: name}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		return // made (the binder has yet to bind it), or unknown: the next pass looks again
	}
	dir := filepath.Join(s.root, "pv-"+string(pvc.UID))
	if ds := pvc.Spec.DataSource; ds != nil {
		if ds.Kind != gvkVolumeSnapshot.Kind || ds.APIGroup == nil || *ds.APIGroup != gvkVolumeSnapshot.Group {
			return // no other data source is served here
		}
		uid, ok := ready[types.NamespacedName{Namespace: pvc.Namespace, Name: ds.Name}]
		if !ok {
			return // the snapshot is not ready: the claim waits
		}
		if err := copyDir(SnapshotDir(s.root, uid), dir); err != nil {
			_ = os.RemoveAll(dir)
			return
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": CloneProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              CloneClass,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}
	if err := s.c.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		_ = os.RemoveAll(dir)
	}
}

// copyDir copies the regular files of the tree from into to (made fresh).
func copyDir(from, to string) error {
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
