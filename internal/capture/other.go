//go:build !linux

package capture

import (
	"context"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

func unsupported() error {
	return contract.Errorf(contract.CodeUnsupported, "this capture kind is implemented for Linux /proc only")
}

// FileUsers is UNSUPPORTED outside Linux.
func FileUsers(ctx context.Context) (*Capture, error) { return nil, unsupported() }

// FileUsersFiltered is UNSUPPORTED outside Linux.
func FileUsersFiltered(ctx context.Context, f Filter) (*Capture, error) { return nil, unsupported() }

// OpenFilesFiltered is UNSUPPORTED outside Linux.
func OpenFilesFiltered(ctx context.Context, id sample.Identity, f Filter) (*Capture, error) {
	return nil, unsupported()
}

// OpenFiles is UNSUPPORTED outside Linux.
func OpenFiles(ctx context.Context, id sample.Identity) (*Capture, error) { return nil, unsupported() }

// Modules is UNSUPPORTED outside Linux.
func Modules(ctx context.Context, id sample.Identity) (*Capture, error) { return nil, unsupported() }

// Network is UNSUPPORTED outside Linux.
func Network(ctx context.Context, target *sample.Identity) (*Capture, error) {
	return nil, unsupported()
}

// Threads is UNSUPPORTED outside Linux.
func Threads(ctx context.Context, id sample.Identity) (*Capture, error) { return nil, unsupported() }

// Scheduling is UNSUPPORTED outside Linux.
func Scheduling(ctx context.Context, id sample.Identity) (*Capture, error) { return nil, unsupported() }

// InfoOptions page ProcessInfo's command_line (see the Linux
// documentation).
type InfoOptions struct {
	CommandLineOffset, CommandLineLimit int
}

// ProcessInfoPage is UNSUPPORTED outside Linux.
func ProcessInfoPage(ctx context.Context, id sample.Identity, fields []string, o InfoOptions) (*Capture, error) {
	return nil, unsupported()
}

// ProcessInfo is UNSUPPORTED outside Linux.
func ProcessInfo(ctx context.Context, id sample.Identity, fields []string) (*Capture, error) {
	return nil, unsupported()
}

// Mappers is MappersOf's answer (see the Linux documentation).
type Mappers struct {
	PIDs                         []int32
	Examined, Unreadable, Exited int
}

// MappersOf is UNSUPPORTED outside Linux.
func MappersOf(ctx context.Context, path string) (*Mappers, error) { return nil, unsupported() }
