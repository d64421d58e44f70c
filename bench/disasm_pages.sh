#!/usr/bin/env bash
# Disassembles FILE's .text with the CLI page by page, as a person pages
# through it: `inquest bin disasm FILE --section .text --max MAX`, then
# the same with --cursor from the "more rows" line on stderr, until no
# page is left. The instructions go to /dev/null; the page count to stderr.
# Usage: bench/disasm_pages.sh INQUEST FILE [MAX]   (MAX default 5000)
set -euo pipefail
bin=$1 file=$2 max=${3:-5000}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
cursor=() pages=0
while :; do
	"$bin" bin disasm "$file" --section .text --max "$max" "${cursor[@]}" >/dev/null 2>"$err"
	pages=$((pages + 1))
	next=$(sed -n 's/^more rows: repeat with --cursor //p' "$err")
	[ -n "$next" ] || break
	cursor=(--cursor "$next")
done
echo "pages $pages" >&2
