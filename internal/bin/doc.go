// Package bin gives bounded, paged evidence about ELF, PE and Mach-O
// binaries (toolset "bin", docs/bin.md): header facts, sections and segments
// with digests and entropy, dynamic facts, imports and exports, build ids,
// Go build info, hardening verdicts, symbols, strings, disassembly and
// binary comparison. HTTP captures (HAR 1.2) live in the har subpackage.
//
// Facts come from the standard library's debug/elf, debug/pe, debug/macho,
// debug/buildinfo and debug/dwarf, plus this package's own bounded reads of
// the fixed headers (so a file whose later structure cannot be resolved
// still yields its header observations). Recognizing a format is kept
// separate from admitting it: Recognize reads only magic numbers and fixed
// headers; Inspect then admits the file through debug/* and reports every
// structure it could not resolve as an Unresolved entry with its file
// offset, never as "malformed", and never panics on hostile input.
//
// Integer quantities (sizes, offsets, counts) are decimal strings;
// addresses are "0x"-prefixed hexadecimal strings; digests are lowercase
// hexadecimal SHA-256 of the exact file bytes named.
package bin
