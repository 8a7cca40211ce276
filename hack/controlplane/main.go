// Command controlplane starts and stops a local Kubernetes control plane built by
// hack/build-controlplane.sh: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok with one fake node whose pods become Ready.
//
//	go run ./hack/controlplane up   --dir DIR [--apiserver-only]
//	go run ./hack/controlplane down --dir DIR
//
// up leaves the processes running, writes DIR/kubeconfig and PID files under DIR/pids, and
// prints the kubeconfig path. down ends only the processes recorded there. Ports are chosen
// free, so two clusters in two dirs run side by side.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/openuniverse/operator/e2e/testbed"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: controlplane up|down --dir DIR [--apiserver-only]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", filepath.Join(os.TempDir(), "universe-controlplane"), "state directory")
	apiOnly := fs.Bool("apiserver-only", false, "start etcd and kube-apiserver only")
	_ = fs.Parse(os.Args[2:])

	switch os.Args[1] {
	case "up":
		if err := testbed.StopDir(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "controlplane: stopping leftovers:", err)
		}
		_ = os.RemoveAll(*dir)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		c, err := testbed.Start(ctx, testbed.Options{Dir: *dir, Full: !*apiOnly, Detach: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "controlplane:", err)
			_ = testbed.StopDir(*dir)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "controlplane: up in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), filepath.Join(*dir, "logs"))
		fmt.Println(c.Kubeconfig)
	case "down":
		if err := testbed.StopDir(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "controlplane:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: controlplane up|down --dir DIR [--apiserver-only]")
		os.Exit(2)
	}
}
