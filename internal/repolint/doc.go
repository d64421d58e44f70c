// Package repolint holds repository-wide checks that run as ordinary Go
// tests over the source tree: comments, docs, test names and user-visible
// strings must speak to users and maintainers of this repository. They may
// cite external standards by name (an RFC, the MCP specification or the
// PE/COFF specification) but never planning documents kept outside it.
// The package has no API; see words_test.go.
package repolint
