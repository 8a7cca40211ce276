package main

import (
	"flag"
	"os"
	"testing"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestMain stops the apiserver the tests started.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testbed.Run(m))
}
