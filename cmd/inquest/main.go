// Command inquest finds out what a computer is doing: processes, performance
// artifacts and binaries, over MCP (inquest mcp), a CLI and a TUI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/inquest-dev/inquest/internal/cli"
)

// signalGrace is how long a command may take to stop after SIGINT or
// SIGTERM cancelled its context (ending workloads, removing scratch
// directories) before the process exits with 128+signal regardless, so a
// command blocked where no context reaches still ends on one signal. A
// second signal ends the process at once (the default disposition is
// restored after the first).
const signalGrace = 5 * time.Second

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		time.Sleep(signalGrace)
		code := 128 + 2
		if s == syscall.SIGTERM {
			code = 128 + 15
		}
		os.Exit(code)
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
