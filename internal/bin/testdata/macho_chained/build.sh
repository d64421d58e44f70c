#!/bin/sh
# Rebuilds the Mach-O fixtures of TestMachOChainedFixups (macho_fixups_test.go):
# arm64 and x86_64 macOS executables linked by ld64.lld with -fixup_chains,
# so their imports are recorded in LC_DYLD_CHAINED_FIXUPS (imports formats
# DYLD_CHAINED_IMPORT, _ADDEND and _ADDEND64) and their exports in
# LC_DYLD_EXPORTS_TRIE. The libraries are the .tbd stubs written here (no
# SDK is needed). Needs clang-16 and lld-16 (Debian); run from this folder.
# The test compares what it reads with llvm-objdump-16 in the same run,
# so the expected answers are never stored here.
set -eu
CC=${CC:-clang-16}
LD=${LD:-ld64.lld-16}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat >"$t/libSystem.tbd" <<'TBD'
--- !tapi-tbd
tbd-version: 4
targets: [ arm64-macos, x86_64-macos ]
install-name: '/usr/lib/libSystem.B.dylib'
current-version: 1319
exports:
  - targets: [ arm64-macos, x86_64-macos ]
    symbols: [ _printf, _puts, _malloc, _environ_like, _big_table ]
...
TBD
cat >"$t/libfoo.tbd" <<'TBD'
--- !tapi-tbd
tbd-version: 4
targets: [ arm64-macos, x86_64-macos ]
install-name: '@rpath/libfoo.dylib'
current-version: 1
exports:
  - targets: [ arm64-macos, x86_64-macos ]
    symbols: [ _foo_value, _foo_call, _foo_maybe ]
...
TBD
cat >"$t/plain.c" <<'C'
#include <stdio.h>
extern int foo_value;
extern int foo_call(int);
extern int foo_maybe(void) __attribute__((weak_import));
int exported_counter = 3;
int helper(int x) { return x * 2; }
int (*hook)(const char *) = puts;
int main(void) {
	printf("%d\n", helper(exported_counter) + foo_call(foo_value));
	return foo_maybe ? foo_maybe() : 0;
}
C
cat >"$t/addend.c" <<'C'
extern char big_table[];
char *into = big_table + 100000;
int main(void) { return *into; }
C
cat >"$t/addend64.c" <<'C'
extern char big_table[];
char *far = big_table + 0x100000000LL;
int main(void) { return *far; }
C
for arch in arm64 x86_64; do
	for src in plain addend addend64; do
		$CC -target $arch-apple-macos12 -O1 -c "$t/$src.c" -o "$t/$src.o"
		$LD -arch $arch -platform_version macos 12.0 12.0 -fixup_chains \
			-o "$t/$src-$arch" "$t/$src.o" "$t/libSystem.tbd" "$t/libfoo.tbd"
		gzip -9n <"$t/$src-$arch" >"$src-$arch.gz"
	done
done
