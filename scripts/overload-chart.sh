#!/usr/bin/env bash
# Draws docs/overload.png: goodput against offered load in the loopback
# overload run (TestOverload in package reliability), at full scale, with
# and without unherd's shedding middleware, and keeps the run's results
# beside it (docs/overload.json). The run takes about 100 s and measures
# the machine too: run it on a quiet one.
#
#   scripts/overload-chart.sh                              # seed 1
#   UNHERD_RELIABILITY_SEED=7 scripts/overload-chart.sh
#   scripts/overload-chart.sh docs/overload.svg            # another file or format
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/overload.png}")
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "==> overload run, full scale, seed ${UNHERD_RELIABILITY_SEED:-1} (about 100 s)" >&2
status=0
UNHERD_RELIABILITY_OVERLOAD=full UNHERD_RELIABILITY_SEED=${UNHERD_RELIABILITY_SEED:-1} \
	UNHERD_RELIABILITY_OVERLOAD_JSON="$tmp/overload.json" \
	go test -tags reliability -count=1 -v -run '^TestOverload$' ./reliability/ >"$tmp/run.log" 2>&1 || status=$?
if [ ! -s "$tmp/overload.json" ]; then
	cat "$tmp/run.log" >&2
	echo "the overload run wrote no results; $out not written" >&2
	exit 1
fi
if [ "$status" -ne 0 ]; then
	# The results are drawn as they came out: the log says which goal
	# was missed.
	grep -E -- '--- FAIL|overload_test.go:[0-9]+: (at|goodput|the )' "$tmp/run.log" >&2 || true
	echo "warning: the overload run missed some of its goals (above); drawing its results as they are" >&2
fi

echo "==> chart" >&2
go run ./bench/cmd/overloadchart -in "$tmp/overload.json" -out "$out"
json=${out%.*}.json
cp "$tmp/overload.json" "$json"
echo "==> wrote ${out#"$root"/} and ${json#"$root"/}" >&2
