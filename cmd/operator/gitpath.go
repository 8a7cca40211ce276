package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
)

// gitState is where the git path keeps its inventory and suspended paths: two ConfigMaps
// of the operator's namespace.
func gitState(namespace string) gitops.State {
	return gitops.State{Namespace: namespace, Inventory: install.GitOpsInventory, Suspend: install.GitOpsSuspend}
}

type gitPathFlags struct {
	namespace, kubeconfig string
}

func (f *gitPathFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.namespace, "namespace", "universe-system", "Namespace the operator runs in (holds the git path's ConfigMaps).")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
}

func (f *gitPathFlags) client() (client.Client, error) {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{})
}

// newSuspendCommand returns `operator suspend PATH` (resume: false) or `operator resume
// PATH` (true).
func newSuspendCommand(resume bool) *cobra.Command {
	f := &gitPathFlags{}
	use, short := "suspend PATH", "Hold a git path (a repository directory and everything under it) out of the sweep"
	if resume {
		use, short = "resume PATH", "Let the sweep apply a suspended git path again"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\nThe suspended paths are lines of the ConfigMap " + install.GitOpsSuspend + " (key " + gitops.SuspendKey + ") in\n" +
			"--namespace; the sweep watches it, so a change takes effect at once. A suspended path's objects\n" +
			"are not applied: every report lists the path and each object as SUSPENDED, with its drift\n" +
			"(git or the cluster changed it, and who). Paths it depends on or that depend on it keep\n" +
			"their order (a dependent of a drifted suspended path is held).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			paths, err := setSuspended(cmd.Context(), c, gitState(f.namespace), gitops.CleanPath(args[0]), !resume)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "suspended paths: %s\n", strings.Join(paths, ", "))
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}

// setSuspended adds (or removes) p to the suspend ConfigMap, retrying on conflict, and
// returns the suspended paths after.
func setSuspended(ctx context.Context, c client.Client, st gitops.State, p string, on bool) ([]string, error) {
	var out []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := c.Get(ctx, client.ObjectKey{Namespace: st.Namespace, Name: st.Suspend}, &cm)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return fmt.Errorf("read ConfigMap %s/%s: %w", st.Namespace, st.Suspend, err)
		}
		paths := gitops.ParseSuspended(cm.Data[gitops.SuspendKey])
		switch {
		case on && !slices.Contains(paths, p):
			paths = append(paths, p)
			slices.Sort(paths)
		case !on:
			paths = slices.DeleteFunc(paths, func(q string) bool { return q == p })
		}
		out = paths
		text := strings.Join(paths, "\n")
		if text != "" {
			text += "\n"
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[gitops.SuspendKey] = text
		if create {
			cm.Namespace, cm.Name = st.Namespace, st.Suspend
			return c.Create(ctx, &cm, client.FieldOwner(kinds.ManagerCLI))
		}
		return c.Update(ctx, &cm, client.FieldOwner(kinds.ManagerCLI))
	})
	return out, err
}

// newOrphansCommand returns `operator orphans [--delete [--yes]]`.
func newOrphansCommand() *cobra.Command {
	f := &gitPathFlags{}
	var del, yes bool
	cmd := &cobra.Command{
		Use:   "orphans",
		Short: "List the objects the git sweep applied that git no longer declares; --delete deletes those it created",
		Long: "Print the orphans of the git path's inventory (ConfigMap " + install.GitOpsInventory + " in --namespace):\n" +
			"objects the field manager " + kinds.ManagerGitOps + " applied and git no longer declares, each\n" +
			"with the revision that removed it. The sweep never deletes them.\n\n" +
			"With --delete, after a confirmation (--yes for scripts), delete only the listed orphans the sweep\n" +
			"itself created, each only while it still has the uid the inventory recorded and is still\n" +
			"applied by " + kinds.ManagerGitOps + " (the delete carries the uid as a precondition). Objects the sweep\n" +
			"adopted (they existed before it) are listed and kept.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			return orphans(cmd.Context(), c, gitState(f.namespace), cmd.InOrStdin(), cmd.OutOrStdout(), del, yes)
		},
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&del, "delete", false, "Delete the listed orphans the git sweep created, after a confirmation.")
	cmd.Flags().BoolVar(&yes, "yes", false, "With --delete: do not ask.")
	return cmd
}

func readInventory(ctx context.Context, c client.Client, st gitops.State) (*corev1.ConfigMap, gitops.Inventory, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: st.Namespace, Name: st.Inventory}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, gitops.Inventory{}, nil
		}
		return nil, gitops.Inventory{}, fmt.Errorf("read the inventory ConfigMap %s/%s: %w", st.Namespace, st.Inventory, err)
	}
	inv, err := gitops.DecodeInventory(cm.Data[gitops.InventoryKey])
	if err != nil {
		return nil, inv, fmt.Errorf("ConfigMap %s/%s: %w", st.Namespace, st.Inventory, err)
	}
	return &cm, inv, nil
}

func orphans(ctx context.Context, c client.Client, st gitops.State, in io.Reader, out io.Writer, del, yes bool) error {
	_, inv, err := readInventory(ctx, c, st)
	if err != nil {
		return err
	}
	list := inv.Orphans()
	for _, o := range list {
		who := "created by the git sweep"
		if !o.Created {
			who = "adopted by the git sweep (it existed before): never deleted here"
		}
		fmt.Fprintf(out, "%s %s: removed from git in %s (was %s), %s\n", o.Object, gitops.Orphaned, o.RemovedIn, o.File, who)
	}
	fmt.Fprintf(out, "%d orphans (the sweep never prunes)\n", len(list))
	if !del {
		return nil
	}
	cands, kept := gitops.DeletionCandidates(inv)
	for _, o := range kept {
		why := "adopted by the git sweep, not created by it"
		if o.Created {
			why = "the sweep has not recorded its uid yet (run again after the next sweep)"
		}
		fmt.Fprintf(out, "%s KEPT: %s\n", o.Object, why)
	}
	var todo []*unstructured.Unstructured
	for _, o := range cands {
		u, why := deletable(ctx, c, o)
		if why != "" {
			fmt.Fprintf(out, "%s KEPT: %s\n", o.Object, why)
			continue
		}
		todo = append(todo, u)
	}
	if len(todo) == 0 {
		fmt.Fprintln(out, "nothing to delete")
		return nil
	}
	if !yes {
		fmt.Fprintf(out, "Delete these %d objects? [y/N] ", len(todo))
		line, _ := bufio.NewReader(in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(out, "nothing deleted")
			return nil
		}
	}
	failed := 0
	for _, u := range todo {
		uid := u.GetUID()
		err := c.Delete(ctx, u, client.Preconditions{UID: &uid})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			fmt.Fprintf(out, "%s/%s/%s DELETE\n", u.GetKind(), u.GetNamespace(), u.GetName())
		default:
			failed++
			fmt.Fprintf(out, "%s/%s/%s ERROR: %v\n", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	// The sweep drops a deleted orphan from the inventory when its watch sees it gone.
	if failed > 0 {
		return fmt.Errorf("orphans: %d not deleted", failed)
	}
	return nil
}

// deletable reads the orphan and says why it must be kept ("" when it may go): gone,
// recreated under another uid, or no longer applied by the git field manager.
func deletable(ctx context.Context, c client.Client, o gitops.Orphan) (*unstructured.Unstructured, string) {
	m, err := c.RESTMapper().RESTMapping(o.Object.GroupKind())
	if err != nil {
		return nil, "no API serves its kind: " + err.Error()
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Object.Namespace, Name: o.Object.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "already gone"
		}
		return nil, err.Error()
	}
	if u.GetUID() != types.UID(o.UID) {
		return nil, fmt.Sprintf("recreated since (uid %s, the inventory has %s): not the object the sweep created", u.GetUID(), o.UID)
	}
	if !slices.ContainsFunc(u.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == kinds.ManagerGitOps }) {
		return nil, "no longer applied by " + kinds.ManagerGitOps
	}
	return u, ""
}
