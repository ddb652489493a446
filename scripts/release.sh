#!/usr/bin/env bash
# Cuts release VERSION of every module of the repository: every
# requirement on a module of the repository set to VERSION, the go.sum
# lines those need, one commit, and a tag per module (VERSION for the root,
# DIR/VERSION for the module in DIR). Nothing is pushed; publish with
#   git push origin HEAD && git push origin <the tags it prints>
# Try the release first as a user would: scripts/release.sh --proxy DIR VERSION
# writes a GOPROXY directory (file://DIR) for the tagged version.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
if [[ ${1:-} == --proxy ]]; then
	[[ $# -eq 3 ]] || { echo "usage: $0 [--proxy DIR] VERSION" >&2; exit 2; }
	out=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
	cd release && exec go run ./cmd/release -repo "$repo" -proxy "$out" "$3"
fi
[[ $# -eq 1 ]] || { echo "usage: $0 [--proxy DIR] VERSION" >&2; exit 2; }
cd release && exec go run ./cmd/release -repo "$repo" "$1"
