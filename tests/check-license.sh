#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# check-license.sh: every source, script, build and man file the project tracks
# names its licence in an SPDX line near its top, and the licence texts exist.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
want='SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause'
bad=0
for f in LICENSE LICENSES/GPL-2.0.txt LICENSES/BSD-2-Clause.txt; do
	[ -s "$f" ] || { echo "missing: $f"; bad=$((bad + 1)); }
done
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "SKIP: not a git checkout (the file list comes from git ls-files)"
	exit 77
fi
n=0
while IFS= read -r f; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	head -n 3 "$f" | grep -qF "$want" || { echo "no SPDX line in the first 3 lines: $f"; bad=$((bad + 1)); }
done < <(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.sh' '*.py' '*.mk' '*.map' '*.8' \
	Makefile .ci/run tests/vm/init)
echo "$n files checked, $bad without the licence"
[ "$bad" -eq 0 ]
