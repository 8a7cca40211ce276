package main

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// notSettings are the fields of runOptions no flag sets, each with why.
var notSettings = map[string]string{
	"Build.APIGroup":         "SetupKinds sets it from --api-group (WithBuildContext ignores it)",
	"Build.Inputs":           "read per CR from the cluster (render.ListInputs), never configured",
	"Build.Loops":            "set at start from --controllers (a loop-driven Kind says whether its loop runs)",
	"sweeper":                "the running sweep, set by setupGitOps for the deploy plane",
	"commits":                "the running git source, set by setupGitOps",
	"fleet":                  "the running fleet sweeps (--fleet), set by setupGitOps for the deploy plane",
	"driveToken":             "a token the Rust environment gives as a value (APPS_SERVICE_TOKEN …), held in memory: install mounts --drive-token-secret instead",
	"agentToken":             "AGENT_DEPLOY_SERVICE_TOKEN, held in memory: install mounts --agent-cloud-token-secret instead",
	"loaded":                 "the origins of the values, from loadConfig",
	"alerts":                 "the running alert sink, set by setupAlerts from --alerts-secret",
	"GitHub.MaxFileBytes":    "set from --gitops-max-file-bytes at start",
	"Git.MaxFileBytes":       "set from --gitops-max-file-bytes at start",
	"GitOps.State.Namespace": "set by setupGitOps from --namespace (the git path's ConfigMaps live in the operator's namespace)",
	"GitOps.State.Inventory": "fixed: install.GitOpsInventory, granted by name in the generated RBAC",
	"GitOps.State.Suspend":   "fixed: install.GitOpsSuspend, granted by name in the generated RBAC",
	"CommitStatus.Burst":     "fixed: bursts of 5 posts (commitstatus.DefaultOptions); --commit-status-per-minute sets the rate",
	"CommitStatus.Queue":     "fixed: 64 statuses wait at most, the oldest dropped (commitstatus.DefaultOptions)",
	"CommitStatus.Timeout":   "fixed: 10 s per attempt (commitstatus.DefaultOptions)",
	"GitOps.State.Status":    "fixed: install.GitOpsStatus (the GitSync object), granted by name in the generated RBAC",
	"GitOps.State.APIGroup":  "set by setupGitOps from --api-group (the GitSync is served there)",
	"GitOps.MetadataOnly":    "set by operator up alone (one sweep, no status watches); run's sweep keeps the health watches",
	"GitOps.Mapper":          "set by operator up alone (install and the sweep share one discovery); run's sweep builds its own",
	"GitOps.AwaitsStatus":    "set at start from --controllers and --api-group: the Kinds whose controllers run here (awaitsStatus)",
	"Plane.StreamBuffer":     "a fixed bound of drive/plane (256 events queued per stream client); plane.Options.BindFlags declares no flag for it",
}

// leaves lists the paths of the leaf fields of v (a struct): exported fields of nested
// structs, and the top level's unexported ones.
func leaves(v reflect.Value, prefix string, out map[string]reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		path := prefix + f.Name
		fv := v.Field(i)
		if !f.IsExported() {
			if prefix == "" {
				out[path] = fv
			}
			continue
		}
		if fv.Kind() == reflect.Struct && f.Type.String() != "time.Duration" {
			leaves(fv, path+".", out)
			continue
		}
		out[path] = fv
	}
}

func snapshot(o *runOptions) map[string]string {
	raw := map[string]reflect.Value{}
	leaves(reflect.ValueOf(o).Elem(), "", raw)
	out := map[string]string{}
	for k, v := range raw {
		if v.CanInterface() {
			out[k] = fmtValue(v)
		} else {
			out[k] = "unexported"
		}
	}
	return out
}

func fmtValue(v reflect.Value) string {
	if v.CanInterface() {
		return strings.TrimSpace(strings.ReplaceAll(sprint(v.Interface()), "\n", " "))
	}
	return ""
}

// sample is a value of a flag that differs from its default.
func sample(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		if f.DefValue == "true" {
			return "false"
		}
		return "true"
	case "duration":
		if f.DefValue == "7s" {
			return "8s"
		}
		return "7s"
	case "int", "int32", "int64", "uint", "float32", "float64":
		if f.DefValue == "7" {
			return "8"
		}
		return "7"
	case "stringSlice":
		return "sample-a,sample-b"
	default:
		return "sample-" + f.Name
	}
}

// TestEveryRunSettingIsInstallable walks the configuration type: every field of runOptions
// is set by a run flag (or says in notSettings why not), every run flag sets a field, and
// every run flag either reaches the installed Deployment as given (install passes it
// through) or is listed in processLocal with a reason. A new setting cannot be forgotten.
func TestEveryRunSettingIsInstallable(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	(&runOptions{}).BindFlags(fs)
	covered := map[string]string{} // field -> flag
	fs.VisitAll(func(f *pflag.Flag) {
		ffs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o := &runOptions{}
		o.BindFlags(ffs)
		before := snapshot(o)
		if err := ffs.Set(f.Name, sample(f)); err != nil {
			t.Errorf("--%s=%s: %v", f.Name, sample(f), err)
			return
		}
		after := snapshot(o)
		n := 0
		for k, v := range after {
			if before[k] != v {
				covered[k], n = f.Name, n+1
			}
		}
		if n == 0 {
			t.Errorf("--%s sets no field of runOptions", f.Name)
		}
	})
	all := map[string]reflect.Value{}
	leaves(reflect.ValueOf(&runOptions{}).Elem(), "", all)
	fields := make([]string, 0, len(all))
	for k := range all {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	for _, k := range fields {
		_, flagged := covered[k]
		why, listed := notSettings[k]
		switch {
		case !flagged && !listed:
			t.Errorf("field %s is set by no flag of operator run: make it one, or list it in notSettings with why", k)
		case flagged && listed:
			t.Errorf("field %s is set by --%s but listed in notSettings (%s)", k, covered[k], why)
		}
	}
	for k := range notSettings {
		if _, ok := all[k]; !ok {
			t.Errorf("notSettings lists %s, which is no field", k)
		}
	}

	// install: each run flag passed through as given, or process-local with a reason.
	for name, why := range processLocal {
		if fs.Lookup(name) == nil {
			t.Errorf("processLocal lists --%s, which is no run flag", name)
		}
		if why == "" {
			t.Errorf("processLocal --%s: no reason", name)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if _, local := processLocal[f.Name]; local {
			return
		}
		inst := &installFlags{}
		ifs := pflag.NewFlagSet("install", pflag.ContinueOnError)
		inst.bind(ifs)
		if ifs.Lookup(f.Name) == nil {
			t.Errorf("--%s is neither an install flag nor process-local", f.Name)
			return
		}
		v := sample(f)
		if err := ifs.Set(f.Name, v); err != nil {
			t.Errorf("install --%s=%s: %v", f.Name, v, err)
			return
		}
		args := inst.passThrough()
		if f.Name == "controllers" {
			args = append(args, "--controllers="+strings.Join(inst.run.Controllers, ","))
		}
		// what the Deployment's `operator run` parses equals what install was given
		rfs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		got := &runOptions{}
		got.BindFlags(rfs)
		if err := rfs.Parse(args); err != nil {
			t.Errorf("install --%s: operator run refuses %q: %v", f.Name, args, err)
			return
		}
		if a, b := flagValue(rfs.Lookup(f.Name)), flagValue(ifs.Lookup(f.Name)); a != b {
			t.Errorf("install --%s=%s: the Deployment runs with %q", f.Name, b, a)
		}
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+f.Name+"=") }) {
			t.Errorf("install --%s=%s is not among the Deployment's arguments %q", f.Name, v, args)
		}
	})
}

func sprint(v any) string { return fmt.Sprintf("%#v", v) }

// TestRunRefusesUnpinnedStaticServerImage: operator run stops at start on a static server
// image every Static build would refuse, before it reaches the cluster.
func TestRunRefusesUnpinnedStaticServerImage(t *testing.T) {
	for _, img := range []string{"nginx", "nginx:latest"} {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o := &runOptions{}
		o.BindFlags(fs)
		if err := fs.Parse([]string{"--static-server-image=" + img, "--kubeconfig=/nonexistent"}); err != nil {
			t.Fatal(err)
		}
		if err := run(o); err == nil || !strings.Contains(err.Error(), "--static-server-image") {
			t.Errorf("--static-server-image=%s: run returned %v, want the flag refused", img, err)
		}
	}
}
