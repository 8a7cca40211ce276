package drive

import "fmt"

// AgentMode is how far the AgentDeployment loop may act (--agent-deploy-mode).
type AgentMode string

// The agent modes. Off only reports; BindOnly may create the agent and bind a named
// machine but never launches one (launching costs money); On may also launch.
const (
	AgentModeOff      AgentMode = "off"
	AgentModeBindOnly AgentMode = "bind-only"
	AgentModeOn       AgentMode = "on"
)

// ParseAgentMode reads --agent-deploy-mode; empty is off, anything unknown an error.
func ParseAgentMode(s string) (AgentMode, error) {
	switch AgentMode(s) {
	case "", AgentModeOff:
		return AgentModeOff, nil
	case AgentModeBindOnly, AgentModeOn:
		return AgentMode(s), nil
	}
	return "", fmt.Errorf("unknown agent deploy mode %q (want off, bind-only or on)", s)
}

// Provision is what the loop does for one AgentDeployment.
type Provision string

// The provision plans.
const (
	// ProvisionReadOnly: observe and report; create, bind and launch nothing.
	ProvisionReadOnly Provision = "ReadOnly"
	// ProvisionBindExisting: ensure the agent, bind spec.machineId.
	ProvisionBindExisting Provision = "BindExisting"
	// ProvisionLaunchThenBind: ensure the agent, launch a machine at spec.provider, bind it.
	ProvisionLaunchThenBind Provision = "LaunchThenBind"
	// ProvisionNoTarget: ensure the agent; no machine is named and no provider to launch at.
	ProvisionNoTarget Provision = "NoTarget"
)

// AgentTarget is what the spec names as the machine.
type AgentTarget struct {
	MachineID string // spec.machineId, or the machine an earlier launch recorded in status
	Provider  string // spec.provider
}

// Plan is the decision for one AgentDeployment, with why.
type Plan struct {
	Provision Provision
	Reason    string
}

// PlanAgent decides the provision plan. It is pure. Without the peers' URLs and
// credentials (configured false) it is read-only whatever the mode; a machine id always
// wins over a provider; bind-only never launches.
func PlanAgent(mode AgentMode, configured bool, t AgentTarget) Plan {
	switch {
	case !configured:
		return Plan{ProvisionReadOnly, "cloud and visor URLs and credentials are not all configured; read-only"}
	case mode != AgentModeBindOnly && mode != AgentModeOn:
		return Plan{ProvisionReadOnly, "agent deploy mode off; read-only"}
	case t.MachineID != "":
		return Plan{ProvisionBindExisting, fmt.Sprintf("bind machine %s", t.MachineID)}
	case t.Provider == "":
		return Plan{ProvisionNoTarget, "no machineId and no provider: nothing to bind"}
	case mode == AgentModeBindOnly:
		return Plan{ProvisionNoTarget, fmt.Sprintf("launching a machine at %s needs agent deploy mode on; bind-only never launches", t.Provider)}
	default:
		return Plan{ProvisionLaunchThenBind, fmt.Sprintf("launch a machine at %s, then bind it", t.Provider)}
	}
}

// MayCreateAgent reports whether the plan may create the agent at the cloud API.
func (p Plan) MayCreateAgent() bool { return p.Provision != ProvisionReadOnly }
