//go:build !(linux || darwin || freebsd)

package bin

import "errors"

// capstoneLib is unavailable on this platform: the library is loaded with
// dlopen, which this build has no binding for.
type capstoneLib struct{ major int }

func loadCapstone() (*capstoneLib, error) {
	return nil, errors.New("loading the Capstone library is not supported on this platform")
}

func (c *capstoneLib) version() string { return "" }

func (c *capstoneLib) decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error) {
	return nil, errors.New("the Capstone library is not available")
}

// zydisLib is unavailable on this platform (no dlopen binding).
type zydisLib struct{}

func loadZydis() (*zydisLib, error) {
	return nil, errors.New("loading the Zydis library is not supported on this platform")
}

func (z *zydisLib) version() string { return "" }

func (z *zydisLib) decodeX86(mode int, intel bool, code []byte, pc uint64, count int) ([]extInsn, error) {
	return nil, errors.New("the Zydis library is not available")
}
