#!/usr/bin/env bash
# npm run test:citus: installs Citus from ../shared/citus when PostgreSQL 15 lacks it, starts (or
# checks) its 3-node cluster in CITUS_CLUSTER_DIR, runs the Citus pass of the suite
# (vitest.citus.config.ts) against the coordinator, then the tests that stop a worker and move a
# workplace (test/citus/), alone. Leaves the cluster running; `setup-cluster.sh stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

CITUS_SHARED="${CITUS_SHARED:-../shared/citus}"
export CITUS_CLUSTER_DIR="${CITUS_CLUSTER_DIR:-${TMPDIR:-/tmp}/wpa-citus-cluster}"

if [ ! -f /usr/lib/postgresql/15/lib/citus.so ]; then
  if [ "$(id -u)" = 0 ]; then "$CITUS_SHARED/install.sh"; else sudo "$CITUS_SHARED/install.sh"; fi
fi
url="$("$CITUS_SHARED/setup-cluster.sh" 2>/dev/null | tail -n 1)"
echo "Citus coordinator: $url (cluster in $CITUS_CLUSTER_DIR)"

DATABASE_URL="$url" npx vitest run --config vitest.citus.config.ts "$@"
DATABASE_URL="$url" CITUS_PASS=faults npx vitest run --config vitest.citus.config.ts
