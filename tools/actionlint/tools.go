//go:build tools

// Package tools pins actionlint's command in this module's go.mod and go.sum.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
