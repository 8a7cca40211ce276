package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/openuniverse/operator/kinds"
)

func TestCRDsCommand(t *testing.T) {
	cases := map[string]struct {
		args    []string
		group   string
		toDir   bool
		lux     bool
		wantErr bool
	}{
		"lux network kinds": {args: []string{"--lux-network-kinds"}, group: kinds.DefaultAPIGroup, lux: true},
		"stdout":            {args: []string{"--api-group", "lux.cloud"}, group: "lux.cloud"},
		"default":           {args: nil, group: kinds.DefaultAPIGroup},
		"out dir":           {args: []string{"--api-group", "zoo.cloud"}, group: "zoo.cloud", toDir: true},
		"bad group":         {args: []string{"--api-group", "nodot"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := newCRDsCommand()
			var stdout bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&bytes.Buffer{})
			dir := t.TempDir()
			args := tc.args
			if tc.toDir {
				args = append(args, "--out", dir)
			}
			cmd.SetArgs(args)
			err := cmd.Execute()
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := kinds.Bundle(tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lux {
				lux, err := kinds.LuxNetworkBundle()
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, lux...)
				for _, k := range []string{"luxnetworks.lux.network", "luxchains.lux.network", "luxindexers.lux.network", "luxexplorers.lux.network",
					"luxgateways.lux.network", "luxmpcs.lux.network", "kmssecrets.secrets.lux.network"} {
					if !bytes.Contains(stdout.Bytes(), []byte("name: "+k+"\n")) {
						t.Errorf("--lux-network-kinds prints no CRD %s", k)
					}
				}
			}
			got := stdout.Bytes()
			if tc.toDir {
				if got, err = os.ReadFile(filepath.Join(dir, tc.group+".yaml")); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("crds %v: output differs from kinds.Bundle(%s)", args, tc.group)
			}
		})
	}
}
