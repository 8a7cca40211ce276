// Command devissuer is the development OpenID Connect issuer of `make demo`: it listens on
// loopback only (127.0.0.1, a free port), signs in one fixed user without a prompt (the
// "dev sign-in": the code flow with PKCE, as a real issuer runs it) and prints its URL on
// stdout. It is for a laptop: it is not in the image and `operator install` never names it.
//
//	go run ./hack/devissuer --client-id deploy-demo --email admin@demo.local --org platform
//
// The deploy plane trusts it through --deploy-plane-oidc-issuer <printed URL>.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/openuniverse/operator/e2e/testbed"
)

func main() {
	clientID := flag.String("client-id", "deploy-demo", "the only OAuth client (the plane's --deploy-plane-oidc-client-id and audience)")
	email := flag.String("email", "admin@demo.local", "the signed-in user's email (the plane's user name)")
	org := flag.String("org", "platform", "the user's org claim (the plane's --deploy-plane-admin-org makes it an admin)")
	group := flag.String("group", "admin", "a group claim of the user")
	flag.Parse()
	iss, err := testbed.NewOIDCIssuer(*clientID)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devissuer:", err)
		os.Exit(1)
	}
	defer iss.Close()
	// never anything but loopback: a sign-in that asks nothing must not be reachable from elsewhere
	u, err := url.Parse(iss.URL)
	if err != nil || u.Scheme != "http" || !net.ParseIP(u.Hostname()).IsLoopback() {
		fmt.Fprintf(os.Stderr, "devissuer: refusing to serve on %s: loopback only\n", iss.URL)
		os.Exit(1)
	}
	iss.Login = map[string]any{"sub": "dev-" + *email, "email": *email, "org": *org, "groups": []string{*group}}
	fmt.Println(iss.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
