package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/source"
)

// The configuration of `operator run` is one value, runOptions, whose schema is its flag set:
// every setting is a run flag (declared by runOptions.BindFlags and the packages' own
// Options.BindFlags), and every other source decodes into the same flags by name. The
// precedence, highest first:
//
//  1. flag: the command line;
//  2. env: OPERATOR_<FLAG> (--gitops-resync is OPERATOR_GITOPS_RESYNC);
//  3. legacy env: the Rust operator's variables (legacyVars), converted to the flag's syntax;
//  4. file: --config FILE (OPERATOR_CONFIG), YAML whose keys are flag names; an unknown key
//     is an error naming it;
//  5. legacy default: in legacy mode only, the Rust operator's own default of a setting whose
//     default differs from ours (legacyDefaults);
//  6. default: the flag's.
//
// A command line or environment beats the file because a file is the shared base (one
// ConfigMap for every replica) and the environment is the per-Deployment override, as with
// the Rust operator, whose environment was the whole configuration.
//
// Legacy mode is on when any of the Rust operator's loop variables (legacyMarkers) is set and
// non-empty. In it the Rust rule holds for the loops: each master switch defaults off, so a
// first deploy is inert; --controllers (flag, env or file) still wins when given. Outside
// legacy mode --controllers has our default (kinds, gitops, imageupdate).
//
// Tokens given as values (APPS_SERVICE_TOKEN …) are held in memory as credentials, never
// written to a file, a flag or a log; `operator config print` shows them masked.

// Origin says where a setting's value came from.
type Origin string

const (
	OriginDefault       Origin = "default"
	OriginLegacyDefault Origin = "legacy default"
	OriginFile          Origin = "file"
	OriginLegacyEnv     Origin = "legacy env"
	OriginEnv           Origin = "env"
	OriginFlag          Origin = "flag"
)

// setting is one resolved value: where it came from and, for env and file, the variable or
// the file.
type setting struct {
	Origin Origin
	From   string // the variable, file or flag that gave it
}

// memoryToken is a credential given as an environment value: held in memory, never written.
type memoryToken struct {
	tok  source.Token
	From string // the variable it came from
}

func (m *memoryToken) Token() source.Token           { return m.tok }
func (m *memoryToken) Reload() (source.Token, error) { return m.tok, nil }

// String, GoString and Format never print the token.
func (m *memoryToken) String() string             { return "*** (from " + m.From + ")" }
func (m *memoryToken) GoString() string           { return m.String() }
func (m *memoryToken) Format(f fmt.State, _ rune) { fmt.Fprint(f, m.String()) }
func newMemoryToken(v, from string) *memoryToken {
	return &memoryToken{tok: source.NewToken(strings.TrimSpace(v)), From: from}
}

// loaded is what loadConfig found besides the values: their origins, legacy mode, the
// warnings and why each loop runs or not.
type loaded struct {
	Origins  map[string]setting // flag name -> origin
	Legacy   bool
	Markers  []string // the legacy variables that turned legacy mode on
	Warnings []string
	Loops    []loopDecision
}

// loopDecision is one loop's on/off and why, logged at start.
type loopDecision struct {
	Loop string
	On   bool
	Why  string
}

// legacyVar maps Rust operator variables to one run flag: the first non-empty of Env wins.
type legacyVar struct {
	Env  []string
	Flag string
	// Conv turns the variable's value into the flag's syntax, with the Rust parsing rule
	// (floors, fallbacks); nil keeps it as it is.
	Conv func(string) (string, error)
}

// secs converts whole seconds with the Rust rule: below floor is floor, unparseable is def.
func secs(def, floor int) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			n = def
		}
		return (time.Duration(max(n, floor)) * time.Second).String(), nil
	}
}

// exactlyTrue is the Rust switches' rule: the value must be exactly "true".
func exactlyTrue(v string) (string, error) { return strconv.FormatBool(v == "true"), nil }

// list is a Rust list: comma, space, tab or newline separated.
func list(v string) (string, error) {
	return strings.Join(strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }), ","), nil
}

// namespaceList is GITOPS_NAMESPACES: comma, space, tab or newline separated, * anywhere
// meaning every namespace; blank or separators only counts as unset.
func namespaceList(v string) (string, error) {
	l, _ := list(v)
	if slices.Contains(strings.Split(l, ","), "*") {
		return "*", nil
	}
	return l, nil
}

// legacyVars are the Rust operator's documented variables that set a run flag
// (/work/shared/reference: reference-loop-behaviors.md §1.2, §3.1, §3.5, §4, §8;
// wire-contract.md §12).
var legacyVars = []legacyVar{
	{Env: []string{"GITOPS_REPO"}, Flag: "github-repository"},
	{Env: []string{"GITOPS_BRANCH"}, Flag: "github-branch"},
	{Env: []string{"GITOPS_CRS_PATH"}, Flag: "github-path"},
	{Env: []string{"GITOPS_GITHUB_API"}, Flag: "github-api-url"},
	{Env: []string{"GITOPS_TOKEN_FILE"}, Flag: "gitops-token-file"},
	{Env: []string{"GITOPS_RESYNC_SECS"}, Flag: "gitops-resync", Conv: secs(45, 10)},
	{Env: []string{"GITOPS_NAMESPACES", "GITOPS_NAMESPACE"}, Flag: "gitops-namespaces", Conv: namespaceList},
	{Env: []string{"GITOPS_APPLY_SCOPE"}, Flag: "gitops-apply-scope", Conv: list},
	{Env: []string{"GITOPS_WORKDIR"}, Flag: "git-cache-dir"},
	{Env: []string{"APPS_PLATFORM_URL"}, Flag: "drive-platform-url"},
	{Env: []string{"APPS_ORG_ID"}, Flag: "drive-org-id"},
	{Env: []string{"APPS_CLUSTER", "APPS_LOCAL_CLUSTER"}, Flag: "drive-cluster"},
	{Env: []string{"APPS_DRIVE_MODE"}, Flag: "drive-mode"},
	{Env: []string{"APPS_DRIVE_ALLOW"}, Flag: "drive-allow", Conv: list},
	{Env: []string{"APPS_POLL_SECS"}, Flag: "drive-interval", Conv: secs(60, 5)},
	{Env: []string{"AGENT_DEPLOY_MODE"}, Flag: "agent-deploy-mode"},
	{Env: []string{"AGENT_DEPLOY_CLOUD_URL"}, Flag: "agent-cloud-url"},
	{Env: []string{"AGENT_DEPLOY_VISOR_URL"}, Flag: "agent-visor-url"},
	{Env: []string{"UPGRADE_FSM_ENABLED"}, Flag: "upgrade-fsm", Conv: exactlyTrue},
	{Env: []string{"PREFLIGHT_GC_INTERVAL_SECS"}, Flag: "preflight-gc-interval", Conv: secs(600, 30)},
	{Env: []string{"PREFLIGHT_GC_GRACE_SECS"}, Flag: "preflight-gc-grace", Conv: secs(300, 0)},
	{Env: []string{"HEALTH_ADDR"}, Flag: "health-probe-bind-address"},
	{Env: []string{"LEADER_ELECT"}, Flag: "leader-elect"},
	{Env: []string{"LOG_LEVEL"}, Flag: "log-level", Conv: func(v string) (string, error) {
		// a tracing filter (info,hanzo=debug) keeps its default level
		return strings.ToLower(strings.TrimSpace(strings.SplitN(v, ",", 2)[0])), nil
	}},
	{Env: []string{"WATCH_NAMESPACE"}, Flag: "watch-namespaces"},
}

// Master switches of the Rust operator's loops; each defaults off.
const (
	envGitOpsSwitch  = "GITOPS_RECONCILE_ENABLED"
	envAppsSwitch    = "APPS_CONTROLLER"
	envTenantsSwitch = "TENANT_CONTROLLER"
	envKMSProjector  = "KMS_PROJECTOR"
)

// Tokens the Rust operator takes as values: the drive loop's (first non-empty) and the
// agents loop's cloud token.
var (
	driveTokenVars = []string{"APPS_SERVICE_TOKEN", "PLATFORM_SERVICE_TOKEN", "HANZO_API_KEY"}
	agentTokenVars = []string{"AGENT_DEPLOY_SERVICE_TOKEN"}
)

// legacyPrefixes name the variables that are the Rust operator's: a set one that no table
// knows is warned about by name.
var legacyPrefixes = []string{"GITOPS_", "APPS_", "AGENT_", "PREFLIGHT_GC_", "TENANT_", "KMS_", "UPGRADE_FSM_"}

// legacyDefaults are the Rust operator's defaults that differ from ours, applied in legacy
// mode to a setting no source set. The git ones only while the sweep is on and no --git-url
// is set.
var legacyDefaults = []struct{ Flag, Value string }{
	{"github-repository", "hanzoai/universe"},
	{"github-path", "infra/k8s/operator/crs"},
	{"gitops-token-file", "/creds/token"},
	{"gitops-namespaces", "hanzo"},
	{"namespace", "hanzo-operator-system"},
}

// knownLegacy is every Rust variable this operator reads.
func knownLegacy() map[string]bool {
	k := map[string]bool{envGitOpsSwitch: true, envAppsSwitch: true, envTenantsSwitch: true, envKMSProjector: true}
	for _, v := range legacyVars {
		for _, e := range v.Env {
			k[e] = true
		}
	}
	for _, e := range append(slices.Clone(driveTokenVars), agentTokenVars...) {
		k[e] = true
	}
	return k
}

// isLegacyMarker: a set variable of a Rust loop (not the generic LOG_LEVEL, HEALTH_ADDR,
// LEADER_ELECT or WATCH_NAMESPACE, which other operators use too) turns legacy mode on.
func isLegacyMarker(name string) bool {
	for _, p := range legacyPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(driveTokenVars, name)
}

// envFlag is the OPERATOR_ variable of a flag.
func envFlag(flag string) string {
	return "OPERATOR_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// loadConfig resolves every flag of fs that the command line left alone from the
// environment (environ, as os.Environ) and the file named by --config, in the precedence
// above, and fills the loops' legacy credentials and decisions into o. fs must be o's flags.
//
//nolint:funlen // the precedence reads in one place: flag, OPERATOR_*, legacy variable, --config
func loadConfig(fs *pflag.FlagSet, o *runOptions, environ []string) (*loaded, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" { // an empty value counts as unset
			env[k] = v
		}
	}
	l := &loaded{Origins: map[string]setting{}}
	known := knownLegacy()
	for _, name := range sortedEnv(env) {
		switch {
		case isLegacyMarker(name) && known[name]:
			l.Markers = append(l.Markers, name)
		case isLegacyMarker(name):
			l.Warnings = append(l.Warnings, fmt.Sprintf("environment %s is not a setting this operator (or the Rust operator it replaces) reads; ignored", name))
		case strings.HasPrefix(name, "OPERATOR_") && fs.Lookup(flagOfEnv(name)) == nil && name != "OPERATOR_CONFIG":
			l.Warnings = append(l.Warnings, fmt.Sprintf("environment %s names no flag of operator run; ignored", name))
		}
	}
	l.Legacy = len(l.Markers) > 0

	// the file
	file := map[string]string{}
	path := o.ConfigFile
	if !fs.Changed("config") {
		path = env["OPERATOR_CONFIG"]
	}
	if path != "" {
		var err error
		if file, err = readConfigFile(path, fs); err != nil {
			return nil, err
		}
		o.ConfigFile = path
	}
	// the legacy variables, converted
	legacy := map[string]setting{}
	legacyVal := map[string]string{}
	for _, lv := range legacyVars {
		for _, e := range lv.Env {
			v, ok := env[e]
			if !ok {
				continue
			}
			if lv.Conv != nil {
				c, err := lv.Conv(v)
				if err != nil {
					return nil, fmt.Errorf("environment %s: %w", e, err)
				}
				if c == "" {
					continue // blank lists fall through to the next variable
				}
				v = c
			}
			legacy[lv.Flag], legacyVal[lv.Flag] = setting{Origin: OriginLegacyEnv, From: e}, v
			break
		}
	}
	var err error
	set := func(f *pflag.Flag, v string, s setting) {
		if err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("%s %s: %w", s.Origin, s.From, serr)
			return
		}
		l.Origins[f.Name] = s
	}
	fs.VisitAll(func(f *pflag.Flag) {
		switch e := envFlag(f.Name); {
		case f.Changed:
			l.Origins[f.Name] = setting{Origin: OriginFlag, From: "--" + f.Name}
		case env[e] != "":
			set(f, env[e], setting{Origin: OriginEnv, From: e})
		case legacyVal[f.Name] != "":
			set(f, legacyVal[f.Name], legacy[f.Name])
		case hasKey(file, f.Name):
			set(f, file[f.Name], setting{Origin: OriginFile, From: path})
		default:
			l.Origins[f.Name] = setting{Origin: OriginDefault}
		}
	})
	if err != nil {
		return nil, err
	}
	if l.Legacy {
		if err := l.legacyLoops(fs, o, env); err != nil {
			return nil, err
		}
	}
	l.Loops = decideLoops(o, l)
	return l, nil
}

// legacyLoops applies the Rust rules of legacy mode: the master switches choose the loops
// (unless --controllers was given), the Rust defaults fill what no source set, and the
// tokens given as values become in-memory credentials.
func (l *loaded) legacyLoops(fs *pflag.FlagSet, o *runOptions, env map[string]string) error {
	if l.Origins["controllers"].Origin == OriginDefault {
		c := []string{loopKinds, loopImageUpdate}
		if env[envGitOpsSwitch] == "true" {
			c = append(c, loopGitOps)
		}
		if env[envAppsSwitch] == "true" {
			c = append(c, loopDrive)
		}
		if env[envTenantsSwitch] == "true" {
			c = append(c, loopTenants)
		}
		if m := strings.ToLower(env["AGENT_DEPLOY_MODE"]); m == "bind-only" || m == "on" {
			c = append(c, loopAgents)
		}
		if err := fs.Set("controllers", strings.Join(c, ",")); err != nil {
			return err
		}
		l.Origins["controllers"] = setting{Origin: OriginLegacyDefault, From: "master switches"}
	}
	gitopsOn := slices.Contains(o.Controllers, loopGitOps)
	for _, d := range legacyDefaults {
		if l.Origins[d.Flag].Origin != OriginDefault {
			continue
		}
		git := d.Flag != "namespace"
		if git && (!gitopsOn || o.Git.URL != "") {
			continue
		}
		if err := fs.Set(d.Flag, d.Value); err != nil {
			return err
		}
		l.Origins[d.Flag] = setting{Origin: OriginLegacyDefault}
	}
	// The Rust /reconcile took no secret; ours never runs open: without a secret the webhook
	// is off and the sweep runs on its resync alone.
	if gitopsOn && o.GitOps.WebhookSecretFile == "" && !o.GitOps.WebhookInsecure && l.Origins["webhook-bind-address"].Origin == OriginDefault {
		if err := fs.Set("webhook-bind-address", "0"); err != nil {
			return err
		}
		l.Origins["webhook-bind-address"] = setting{Origin: OriginLegacyDefault, From: "no --gitops-webhook-secret-file: POST /reconcile is off, never open"}
	}
	if o.Drive.TokenFile == "" {
		for _, e := range driveTokenVars {
			if v := env[e]; v != "" {
				o.driveToken = newMemoryToken(v, e)
				break
			}
		}
	}
	if o.Drive.CloudTokenFile == "" {
		for _, e := range agentTokenVars {
			if v := env[e]; v != "" {
				o.agentToken = newMemoryToken(v, e)
				break
			}
		}
	}
	if env[envKMSProjector] != "" {
		l.Warnings = append(l.Warnings, envKMSProjector+" is set: the KMS projector is not part of this operator (KMSSecret CRs stay Pending, NotImplemented)")
	}
	return nil
}

// decideLoops says for every loop whether it runs and why.
func decideLoops(o *runOptions, l *loaded) []loopDecision {
	src := l.Origins["controllers"]
	var why string
	switch src.Origin {
	case OriginLegacyDefault:
		why = "legacy mode (" + strings.Join(l.Markers, ", ") + " set): the Rust master switches, each off by default"
	case OriginDefault:
		why = "the default --controllers"
	default:
		why = "--controllers from " + string(src.Origin) + " " + src.From
	}
	switches := map[string]string{loopGitOps: envGitOpsSwitch + "=true", loopDrive: envAppsSwitch + "=true",
		loopTenants: envTenantsSwitch + "=true", loopAgents: "AGENT_DEPLOY_MODE=bind-only|on"}
	var out []loopDecision
	for _, loop := range loops {
		d := loopDecision{Loop: loop, On: slices.Contains(o.Controllers, loop), Why: why}
		if sw := switches[loop]; sw != "" && src.Origin == OriginLegacyDefault {
			if d.On {
				d.Why = "legacy mode: " + sw
			} else {
				d.Why = "legacy mode: off unless " + sw
			}
		}
		out = append(out, d)
	}
	out = append(out, loopDecision{Loop: "upgrade-fsm", On: o.UpgradeFSM, Why: "--upgrade-fsm from " + l.describe("upgrade-fsm")})
	out = append(out, loopDecision{Loop: "deploy-plane", On: o.Plane.Enabled(), Why: "--deploy-plane-bind-address from " + l.describe("deploy-plane-bind-address")})
	return out
}

func (l *loaded) describe(flag string) string {
	s := l.Origins[flag]
	if s.From == "" {
		return string(s.Origin)
	}
	return string(s.Origin) + " " + s.From
}

// readConfigFile reads a YAML map of flag names to values, strictly: a key that is no flag
// of fs, or a duplicate key, is an error naming it. Lists are comma-joined.
func readConfigFile(path string, fs *pflag.FlagSet) (map[string]string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the file --config names, read by its own operator
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	raw := map[string]any{}
	if err := yaml.UnmarshalStrict(b, &raw); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for _, k := range sortedKeysAny(raw) {
		f := fs.Lookup(k)
		if f == nil || k == "config" {
			return nil, fmt.Errorf("--config %s: unknown key %q (keys are the flags of operator run, e.g. git-url)", path, k)
		}
		switch v := raw[k].(type) {
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			out[k] = strings.Join(parts, ",")
		case map[string]any:
			return nil, fmt.Errorf("--config %s: key %q: want a value or a list, not a map", path, k)
		case nil:
			return nil, fmt.Errorf("--config %s: key %q has no value", path, k)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func flagOfEnv(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "OPERATOR_"), "_", "-"))
}

func sortedEnv(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedKeysAny(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
