// Command inquest finds out what a computer is doing: processes, performance
// artifacts and binaries, over MCP (inquest mcp), a CLI and a TUI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/inquest-dev/inquest/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
