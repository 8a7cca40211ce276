package drive

import (
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{
		"": ModeOff, "off": ModeOff, "bogus": ModeOff, "false": ModeOff,
		"on": ModeOn, "ON": ModeOn, "true": ModeOn, "drive": ModeOn,
		"dry-run": ModeDryRun, "DryRun": ModeDryRun, "dry": ModeDryRun, " dry-run ": ModeDryRun,
	} {
		if got := ParseMode(in); got != want {
			t.Errorf("ParseMode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAllowList(t *testing.T) {
	cases := []struct {
		allow         string
		org, app, env string
		want          bool
	}{
		{"*", "hanzo", "cloud", "prod", true},
		{"hanzo/*", "hanzo", "cloud", "prod", true},
		{"hanzo/*", "lux", "cloud", "prod", false},
		{"hanzo/cloud", "hanzo", "cloud", "dev", true},
		{"hanzo/cloud", "hanzo", "iam", "dev", false},
		{"hanzo/cloud/prod", "hanzo", "cloud", "prod", true},
		{"hanzo/cloud/prod", "hanzo", "cloud", "dev", false},
		{"lux/node, hanzo/cloud/prod", "hanzo", "cloud", "prod", true},
		{"lux/node\thanzo/iam\nzoo/*", "zoo", "x", "y", true},
		{"", "hanzo", "cloud", "prod", false},
		{" , ", "hanzo", "cloud", "prod", false},
		{"hanzo", "hanzo", "cloud", "prod", false},         // a bare org is not a pattern
		{"*/cloud", "hanzo", "cloud", "prod", false},       // no wildcard org
		{"hanzo/cloud/*", "hanzo", "cloud", "prod", false}, // no wildcard env
	}
	for _, c := range cases {
		if got := ParseAllowList(c.allow).Allows(c.org, c.app, c.env); got != c.want {
			t.Errorf("allow %q matches %s/%s/%s = %v, want %v", c.allow, c.org, c.app, c.env, got, c.want)
		}
	}
}

func TestIsReleaseTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"v1.2.3": true, "v0.0.1": true, "v01.2.3": true, "v10.20.30": true,
		"1.2.3": false, "v1.2": false, "v1.2.3-rc.1": false, "v1.2.3+b": false, "latest": false,
		"multi-issuer": false, "": false, "v1.2.3.4": false, "vx.y.z": false, "v1.2.3\n": false,
	} {
		if got := IsReleaseTag(tag); got != want {
			t.Errorf("IsReleaseTag(%q) = %v, want %v", tag, got, want)
		}
	}
}

// TestOfRepository: a container runs a repository whatever its tag or digest; a registry
// port is not a tag; another repository, a longer path or a reference that does not parse
// never matches (kinds.ImageRef's table holds the spellings).
func TestOfRepository(t *testing.T) {
	const dg = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		image, repo string
		want        bool
	}{
		{"ghcr.io/hanzo/cloud:v1.2.3", "ghcr.io/hanzo/cloud", true},
		{"ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud", true},
		{"localhost:5000/hanzo/cloud", "localhost:5000/hanzo/cloud", true},
		{"localhost:5000/hanzo/cloud:v1", "localhost:5000/hanzo/cloud", true},
		{"localhost:5000/hanzo/cloud:v1", "localhost", false},
		{"ghcr.io/hanzo/cloud" + dg, "ghcr.io/hanzo/cloud", true},
		{"ghcr.io/hanzo/cloud:v1" + dg, "ghcr.io/hanzo/cloud", true},
		{"ghcr.io/hanzo/cloud-api:v1", "ghcr.io/hanzo/cloud", false},
		{"ghcr.io/hanzo/cloud@sha256:abcd", "ghcr.io/hanzo/cloud", false}, // not a digest
		{":v1", ":v1", false},
	} {
		if got := ofRepository(c.image, c.repo); got != c.want {
			t.Errorf("ofRepository(%q, %q) = %v, want %v", c.image, c.repo, got, c.want)
		}
	}
}

func row(declared, running string) Row {
	return Row{ID: "hanzo/cloud/prod", Org: "hanzo", App: "cloud", Env: "prod", Registry: "ghcr.io/hanzo/cloud",
		DeclaredTag: declared, RunningTag: running}
}

func TestDecide(t *testing.T) {
	all := AllowList{"*"}
	cases := []struct {
		name   string
		mode   Mode
		allow  AllowList
		row    Row
		want   Verdict
		target string
		reason string
	}{
		{"in sync is skip", ModeOn, all, row("v1.2.3", "v1.2.3"), VerdictSkip, "", "in sync"},
		{"no declared tag is skip", ModeOn, all, row("", "v1.2.3"), VerdictSkip, "", "no declared tag"},
		{"floating refused even when on and allowed", ModeOn, all, row("latest", "v1.2.3"), VerdictRefuse, "", "not a release tag"},
		{"pre-release refused", ModeOn, all, row("v1.3.0-rc.1", "v1.2.3"), VerdictRefuse, "", "not a release tag"},
		{"floating refused in dry-run too", ModeDryRun, all, row("main", "v1.2.3"), VerdictRefuse, "", "refusing"},
		{"floating refused when off", ModeOff, nil, row("main", "v1.2.3"), VerdictRefuse, "", "refusing"},
		{"off never writes", ModeOff, all, row("v1.3.0", "v1.2.3"), VerdictSkip, "ghcr.io/hanzo/cloud:v1.3.0", "off"},
		{"dry-run reports, never writes", ModeDryRun, all, row("v1.3.0", "v1.2.3"), VerdictReport, "ghcr.io/hanzo/cloud:v1.3.0", "dry-run"},
		{"on but not allow-listed only reports", ModeOn, AllowList{"lux/*"}, row("v1.3.0", "v1.2.3"), VerdictReport, "ghcr.io/hanzo/cloud:v1.3.0", "allow-list"},
		{"on with an empty allow-list only reports", ModeOn, nil, row("v1.3.0", "v1.2.3"), VerdictReport, "ghcr.io/hanzo/cloud:v1.3.0", "allow-list"},
		{"on and allow-listed writes", ModeOn, AllowList{"hanzo/cloud/prod"}, row("v1.3.0", "v1.2.3"), VerdictWrite, "ghcr.io/hanzo/cloud:v1.3.0", "from v1.2.3"},
		{"drives when nothing runs", ModeOn, all, row("v1.3.0", ""), VerdictWrite, "ghcr.io/hanzo/cloud:v1.3.0", "nothing running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.mode, c.allow, c.row)
			if d.Verdict != c.want || d.Target != c.target || !strings.Contains(d.Reason, c.reason) {
				t.Errorf("Decide = %+v; want verdict %s target %q reason containing %q", d, c.want, c.target, c.reason)
			}
		})
	}
}

func TestPlanAgent(t *testing.T) {
	cases := []struct {
		name       string
		mode       AgentMode
		configured bool
		target     AgentTarget
		want       Provision
		mayCreate  bool
	}{
		{"unconfigured is read-only even when on", AgentModeOn, false, AgentTarget{MachineID: "m1"}, ProvisionReadOnly, false},
		{"off is read-only", AgentModeOff, true, AgentTarget{MachineID: "m1"}, ProvisionReadOnly, false},
		{"bind-only binds a named machine", AgentModeBindOnly, true, AgentTarget{MachineID: "m1"}, ProvisionBindExisting, true},
		{"machineId wins over provider", AgentModeOn, true, AgentTarget{MachineID: "m1", Provider: "aws"}, ProvisionBindExisting, true},
		{"machineId wins over provider in bind-only", AgentModeBindOnly, true, AgentTarget{MachineID: "m1", Provider: "aws"}, ProvisionBindExisting, true},
		{"on launches at a provider", AgentModeOn, true, AgentTarget{Provider: "aws"}, ProvisionLaunchThenBind, true},
		{"bind-only never launches", AgentModeBindOnly, true, AgentTarget{Provider: "aws"}, ProvisionNoTarget, true},
		{"no target", AgentModeOn, true, AgentTarget{}, ProvisionNoTarget, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := PlanAgent(c.mode, c.configured, c.target)
			if p.Provision != c.want || p.MayCreateAgent() != c.mayCreate || p.Reason == "" {
				t.Errorf("PlanAgent = %+v (mayCreate %v); want %s (mayCreate %v)", p, p.MayCreateAgent(), c.want, c.mayCreate)
			}
		})
	}
	if _, err := ParseAgentMode("launch"); err == nil {
		t.Error("ParseAgentMode accepted an unknown mode")
	}
	if m, _ := ParseAgentMode(""); m != AgentModeOff {
		t.Errorf("empty mode = %q, want off", m)
	}
}
