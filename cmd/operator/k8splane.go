package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/drive/plane/k8s/fleetlink"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// k8sPlaneOptions are the /v1/k8s cluster plane's flags of `operator run`.
type k8sPlaneOptions struct {
	BindAddress string
	Socket      string
	Issuer      string
	Audience    string
	OrgClaim    string
	Options     k8s.Options
}

func (o *k8sPlaneOptions) BindFlags(fs *pflag.FlagSet) {
	d := k8s.DefaultOptions()
	fs.StringVar(&o.BindAddress, "k8s-plane-bind-address", "", "Address of the /v1/k8s cluster plane (36 named ops over the registered clusters); empty or 0 turns it off. Needs --k8s-plane-oidc-issuer.")
	fs.StringVar(&o.Socket, "k8s-plane-socket", "", "Unix socket (mode 0600) serving the same plane to local callers, with the same bearer tokens; empty: none.")
	fs.StringVar(&o.Issuer, "k8s-plane-oidc-issuer", "", "OIDC issuer whose signed tokens the cluster plane accepts. Required: the plane never runs open.")
	fs.StringVar(&o.Audience, "k8s-plane-oidc-audience", "", "Audience (client id) a cluster-plane token must be issued for.")
	fs.StringVar(&o.OrgClaim, "k8s-plane-org-claim", "org", "Token claim holding the caller's org: the org whose registered clusters the caller reaches.")
	fs.BoolVar(&o.Options.AllowNamespaceDelete, "k8s-plane-allow-namespace-delete", false, "Turn on namespaces.delete (it deletes every object of the namespace, claims included); refused for bounded registrations either way.")
	fs.Int64Var(&o.Options.MaxBodyBytes, "k8s-plane-max-body-bytes", d.MaxBodyBytes, "Largest request body of the cluster plane; one more byte is answered 413.")
	fs.DurationVar(&o.Options.OpTimeout, "k8s-plane-op-timeout", d.OpTimeout, "Time one op may take (a watch: its wait and 10 s more); past it 504.")
	fs.Float64Var(&o.Options.Rate, "k8s-plane-rate", d.Rate, "Ops per second one token subject may ask for, after --k8s-plane-burst; past it 429.")
	fs.IntVar(&o.Options.Burst, "k8s-plane-burst", d.Burst, "Ops one token subject may ask for at once.")
	fs.Int32Var(&o.Options.MaxReplicas, "k8s-plane-max-replicas", d.MaxReplicas, "Most replicas workloads.scale sets.")
}

// Enabled reports whether the plane should listen.
func (o k8sPlaneOptions) Enabled() bool {
	return (o.BindAddress != "" && o.BindAddress != "0") || o.Socket != ""
}

// Validate refuses a plane without its issuer: it never runs open.
func (o k8sPlaneOptions) Validate() error {
	switch {
	case o.Issuer == "":
		return errors.New("--k8s-plane-oidc-issuer is required: the cluster plane never runs open")
	case o.Audience == "":
		return errors.New("--k8s-plane-oidc-audience is required: tokens are checked against it")
	case o.OrgClaim == "":
		return errors.New("--k8s-plane-org-claim must not be empty")
	}
	return nil
}

// setupK8sPlane adds the cluster plane to mgr: the process's fleet (shared, built by run:
// runFleet; --fleet-allow-non-routable is its) read over the home cluster's registry and
// credential Secrets (without a cache: no Secret is cached cluster-wide), tokens verified by
// the deploy plane's authenticator, audit Events in default (the Cluster registrations are
// cluster-scoped).
func setupK8sPlane(ctx context.Context, mgr ctrl.Manager, o *runOptions, shared *fleet.Fleet, log logr.Logger) error {
	po := o.K8sPlane
	if err := po.Validate(); err != nil {
		return err
	}
	ao := deploy.DefaultAuthOptions()
	ao.Issuer, ao.Audience, ao.OrgClaim = po.Issuer, po.Audience, po.OrgClaim
	auth, err := deploy.NewAuthenticator(ctx, ao, nil, nil)
	if err != nil {
		return fmt.Errorf("k8s plane: %w", err)
	}
	home, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("k8s plane: home client: %w", err)
	}
	f := shared.Reading(fleet.Registry{Reader: home}, fleet.SecretStore{Reader: home, Namespace: o.Namespace})
	p, err := k8s.New(k8s.Config{Fleet: &fleetlink.Link{Fleet: f, Home: home, Namespace: o.Namespace}, APIGroup: o.APIGroup, Options: po.Options,
		Audit: k8s.EventAuditor{Client: home, Namespace: "default", ClusterAPIVersion: o.APIGroup + "/v1", Log: log}})
	if err != nil {
		return err
	}
	addr := po.BindAddress
	if addr == "0" {
		addr = ""
	}
	return mgr.Add(&k8s.Server{Plane: p, Verifier: k8s.OIDC{A: auth}, BindAddress: addr, Socket: po.Socket, Log: log})
}

// k8sCLI is `operator k8s`'s connection: the plane's URL or socket and the token file.
type k8sCLI struct {
	server, socket, tokenFile, data string
}

// newK8sCommand returns `operator k8s <group> <op>`: one subcommand per op of the
// contract, its help the op's doc comment, the request a JSON object (--data, or - for
// stdin), sent to the plane with the token of --token-file; and `operator k8s rbac`.
func newK8sCommand() *cobra.Command {
	c := &k8sCLI{}
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Call the /v1/k8s cluster plane: operator k8s <group> <op> --data '{...}'",
		Long: "Call one of the cluster plane's 36 named operations over the clusters registered for\n" +
			"your org (the token's org claim), over HTTP (--server) or the plane's unix socket\n" +
			"(--socket). The token is read from --token-file, never from a flag's value.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&c.server, "server", "", "URL of the plane (e.g. https://ops.example.com); OPERATOR_SERVER.")
	pf.StringVar(&c.socket, "socket", "", "The plane's unix socket, instead of --server; OPERATOR_SOCKET.")
	pf.StringVar(&c.tokenFile, "token-file", "", "File holding the bearer token (an ID token of the plane's issuer); OPERATOR_TOKEN_FILE.")
	pf.StringVar(&c.data, "data", "{}", "The op's JSON request, or - to read it from stdin.")
	for _, g := range ops.Groups {
		gc := &cobra.Command{Use: string(g), Short: "The " + string(g) + " operations"}
		for _, op := range ops.All {
			if op.Group != g {
				continue
			}
			mut := ""
			if op.Mutating {
				mut = " (changes the cluster or the registry)"
			}
			gc.AddCommand(&cobra.Command{
				Use: op.Member(), Short: firstLine(op.Doc()) + mut, Long: op.Doc(), Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					return c.call(cmd.Context(), op, cmd.InOrStdin(), cmd.OutOrStdout())
				},
			})
		}
		cmd.AddCommand(gc)
	}
	var apiGroup string
	rbac := &cobra.Command{
		Use: "rbac", Short: "Print the ClusterRole the plane needs on a registered cluster (the union of the ops' grants)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			closed, err := k8s.ClosedKinds(apiGroup)
			if err != nil {
				return err
			}
			out, err := yaml.Marshal(k8s.ClusterRole("universe-k8s-plane", closed))
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	rbac.Flags().StringVar(&apiGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe Kinds (resources.* serves them there).")
	cmd.AddCommand(rbac)
	return cmd
}

func firstLine(doc string) string {
	if i := strings.Index(doc, ". "); i > 0 {
		return doc[:i]
	}
	return strings.TrimSuffix(doc, ".")
}

// call sends the op's request and prints the reply (or the refusal, as an error).
func (c *k8sCLI) call(ctx context.Context, op ops.Op, stdin io.Reader, out io.Writer) error {
	if err := envDefaults(pflagsOf(c)); err != nil {
		return err
	}
	if c.tokenFile == "" {
		return errors.New("--token-file is required")
	}
	tok, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return fmt.Errorf("--token-file: %w", err)
	}
	body := []byte(c.data)
	if c.data == "-" {
		if body, err = io.ReadAll(io.LimitReader(stdin, 16<<20)); err != nil {
			return err
		}
	}
	if !json.Valid(body) {
		return errors.New("--data: not a JSON object")
	}
	hc := &http.Client{Timeout: 2 * time.Minute}
	base := strings.TrimSuffix(c.server, "/")
	switch {
	case c.socket != "":
		sock := c.socket
		hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}
		base = "http://socket"
	case base == "":
		return errors.New("--server or --socket is required")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+k8s.Prefix+"/"+string(op.Group)+"/"+op.Member(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		var e ops.Error
		if json.Unmarshal(data, &e) == nil && e.Code != "" {
			return fmt.Errorf("%s: %s: %s", op.Name, e.Code, e.Message)
		}
		return fmt.Errorf("%s: %s", op.Name, res.Status)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, data, "", "  ") == nil {
		data = append(pretty.Bytes(), '\n')
	}
	_, err = out.Write(data)
	return err
}

// pflagsOf is the CLI's flags as a set, for envDefaults (OPERATOR_SERVER, ...).
func pflagsOf(c *k8sCLI) *pflag.FlagSet {
	fs := pflag.NewFlagSet("k8s", pflag.ContinueOnError)
	fs.StringVar(&c.server, "server", c.server, "")
	fs.StringVar(&c.socket, "socket", c.socket, "")
	fs.StringVar(&c.tokenFile, "token-file", c.tokenFile, "")
	for _, n := range []string{"server", "socket", "token-file"} {
		if f := fs.Lookup(n); f.Value.String() != "" {
			f.Changed = true
		}
	}
	return fs
}
