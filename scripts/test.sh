#!/usr/bin/env bash
# Runs the whole test suite: formatting, vet, staticcheck, and the tests of
# every module (race detector on, order shuffled, examples and fuzz seed
# corpora included), then every benchmark once so they keep compiling and
# their self-checks keep passing. Works on a fresh clone: staticcheck is
# installed into ./.bin at a pinned version.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
export GOBIN="$PWD/.bin"
if ! "$GOBIN/staticcheck" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	echo "==> installing staticcheck $STATICCHECK_VERSION"
	go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

# Every module in the tree: the root and the nested ones.
mapfile -t modules < <(find . -name go.mod -not -path './.bin/*' -printf '%h\n' | sort)

echo "==> gofmt"
unformatted=$(gofmt -l $(printf '%s ' "${modules[@]}") | grep -v '^\.bin/' || true)
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change these files; run gofmt -w on them:" >&2
	echo "$unformatted" >&2
	exit 1
fi

for m in "${modules[@]}"; do
	echo "==> $m: go vet"
	(cd "$m" && go vet ./...)
	echo "==> $m: staticcheck"
	(cd "$m" && "$GOBIN/staticcheck" ./...)
	echo "==> $m: go test -race -shuffle=on"
	(cd "$m" && go test -race -shuffle=on -count=1 ./...)
	echo "==> $m: benchmarks, once each"
	(cd "$m" && go test -run '^$' -bench . -benchtime=1x ./... >/dev/null)
done
echo "==> all checks passed"
