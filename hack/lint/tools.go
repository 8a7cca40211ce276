//go:build tools

// Package lint pins golangci-lint; see go.mod.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
