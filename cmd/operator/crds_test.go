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
		wantErr bool
	}{
		"stdout":    {args: []string{"--api-group", "lux.cloud"}, group: "lux.cloud"},
		"default":   {args: nil, group: kinds.DefaultAPIGroup},
		"out dir":   {args: []string{"--api-group", "zoo.cloud"}, group: "zoo.cloud", toDir: true},
		"bad group": {args: []string{"--api-group", "nodot"}, wantErr: true},
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
