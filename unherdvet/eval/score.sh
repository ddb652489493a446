#!/bin/sh
# Scores one run of run.sh against the evaluation's reading of the code.
#
# Usage: unherdvet/eval/score.sh OUT_DIR
#
# Every finding in OUT_DIR/NAME.json is looked up in verdicts.tsv (true or
# false, judged by reading the code; a finding not judged yet is listed as
# UNJUDGED and counted apart), and placed in the loop of loops.tsv whose
# lines contain it. A loop is caught when one of its expected checks reports
# a line inside it. Prints every finding with its verdict, the loops missed,
# and the totals per check and overall (precision over judged findings,
# recall over the loops found by reading in the repositories of the run).
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT_DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1

# One line per finding: repo, file, line, check (from vet --json, which
# prints one field per line).
for f in "$out"/*.json; do
	name=$(basename "$f" .json)
	awk -v repo="$name" '
		/"file":/  { sub(/.*"file": "/, ""); sub(/",?$/, ""); file = $0 }
		/"line":/  { sub(/.*"line": /, ""); sub(/,$/, ""); line = $0 }
		/"check":/ { sub(/.*"check": "/, ""); sub(/",?$/, ""); print repo "\t" file "\t" line "\t" $0 }
	' "$f"
done | awk -F '\t' -v loopsf="$here/loops.tsv" -v verdictsf="$here/verdicts.tsv" \
	-v present="$(for f in "$out"/*.json; do basename "$f" .json; done | tr '\n' ' ')" '
BEGIN {
	np = split(present, pr, " ")
	for (j = 1; j <= np; j++) ran[pr[j]] = 1
	while ((getline l < verdictsf) > 0) {
		split(l, v, "\t")
		if (v[1] == "repo") continue
		verdict[v[1] "\t" v[2] "\t" v[3]] = v[4]
		reason[v[1] "\t" v[2] "\t" v[3]] = v[5]
	}
	nl = 0
	while ((getline l < loopsf) > 0) {
		split(l, v, "\t")
		if (v[1] == "id" || !(v[2] in ran)) continue
		nl++
		id[nl] = v[1]; lrepo[nl] = v[2]; lfile[nl] = v[3]; lstart[nl] = v[4]; lend[nl] = v[5]
		lexp[nl] = v[6]; lshape[nl] = v[7]
		ne = split(v[6], e, ",")
		for (j = 1; j <= ne; j++) { expected[e[j]]++; wants[nl, e[j]] = 1 }
	}
	checks = "nojitter nodelay unbounded sleepctx notimeout idempotency handlerretry misuse"
}
{
	key = $1 "\t" $2 ":" $3 "\t" $4
	vd = (key in verdict) ? verdict[key] : "UNJUDGED"
	findings[$4]++; total++
	if (vd == "true") { tru[$4]++; ttrue++ } else if (vd == "false") { fal[$4]++; tfalse++ } else { unj[$4]++; tunj++ }
	where = "-"
	for (i = 1; i <= nl; i++) {
		if (lrepo[i] == $1 && lfile[i] == $2 && $3 + 0 >= lstart[i] + 0 && $3 + 0 <= lend[i] + 0) {
			where = id[i]
			if ((i, $4) in wants) { caughtby[i, $4] = 1; caught[i] = 1 }
		}
	}
	printf "%-6s %-10s %-18s %s:%s  %s\n", vd, $4, $1, $2, $3, (where == "-" ? "" : "(" where ")")
}
END {
	print ""
	print "Loops missed:"
	for (i = 1; i <= nl; i++)
		if (!(i in caught)) printf "  %s %s %s:%s (%s) %s\n", id[i], lrepo[i], lfile[i], lstart[i], lexp[i], lshape[i]
	print ""
	printf "%-13s %8s %5s %6s %9s %6s %7s %7s\n", "check", "findings", "true", "false", "unjudged", "loops", "caught", "missed"
	n = split(checks, c, " ")
	for (k = 1; k <= n; k++) {
		ch = c[k]; got = 0
		for (i = 1; i <= nl; i++) if ((i, ch) in caughtby) got++
		printf "%-13s %8d %5d %6d %9d %6d %7d %7d\n", ch, findings[ch], tru[ch], fal[ch], unj[ch], expected[ch], got, expected[ch] - got
	}
	nc = 0
	for (i = 1; i <= nl; i++) if (i in caught) nc++
	printf "%-13s %8d %5d %6d %9d %6d %7d %7d\n", "all", total, ttrue, tfalse, tunj, nl, nc, nl - nc
	print ""
	if (ttrue + tfalse > 0) printf "precision %.0f%% (%d of %d judged findings true)\n", 100 * ttrue / (ttrue + tfalse), ttrue, ttrue + tfalse
	printf "recall    %.0f%% (%d of %d loops found by reading caught)\n", 100 * nc / nl, nc, nl
}'
