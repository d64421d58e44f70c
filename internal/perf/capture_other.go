//go:build !linux

package perf

import "github.com/inquest-dev/inquest/internal/tool"

func (rt *Runtime) captureTools() []tool.Tool { return nil }

func (rt *Runtime) releaseCaptures() {}

func (rt *Runtime) keepCapture(string) string { return "" }

func captureProviderKinds() []string { return nil }

func captureOperationProviders() map[string][]string { return map[string][]string{} }
