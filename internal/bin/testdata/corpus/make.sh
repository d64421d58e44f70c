#!/bin/sh
# Rebuilds the committed Go corpus of the bin tests (run from this
# directory: sh make.sh). The tests read these files as they are; they are
# committed because cross-building the standard library for seven targets
# on an empty build cache takes minutes. Rebuild when main.go changes, and
# record the toolchain below.
set -eu
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src" "$tmp/src2"
printf 'module example.com/corpus\n\ngo 1.26\n' >"$tmp/src/go.mod"
cp "$tmp/src/go.mod" "$tmp/src2/go.mod"
cp main.go.txt "$tmp/src/main.go"
# Same-size change: x*3 and x*5 are both one LEA on amd64, so no other
# function moves.
sed 's/x\*3 + 1/x*5 + 1/' main.go.txt >"$tmp/src2/main.go"
b() { # name dir goos goarch [env...] -- [flags...]
	name=$1 dir=$2 goos=$3 goarch=$4
	shift 4
	envs=""
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	[ $# -gt 0 ] && shift
	(cd "$dir" && env CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" GOFLAGS= $envs \
		go build -trimpath -buildvcs=false -o "$here/$name" "$@" .)
}
b go-linux-amd64 "$tmp/src" linux amd64
b go-linux-amd64-changed "$tmp/src2" linux amd64
# The PIE build is also the GOAMD64=v3 build (AVX2, VEX-encoded code).
b go-linux-amd64-v3-pie "$tmp/src" linux amd64 GOAMD64=v3 -- -buildmode=pie
b go-linux-arm64 "$tmp/src" linux arm64
b go-linux-386 "$tmp/src" linux 386
b go-windows-amd64.exe "$tmp/src" windows amd64
b go-darwin-arm64 "$tmp/src" darwin arm64
b go-darwin-amd64 "$tmp/src" darwin amd64
go version >TOOLCHAIN
sha256sum main.go.txt go-* >SHA256SUMS
