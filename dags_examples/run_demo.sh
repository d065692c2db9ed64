#!/usr/bin/env bash
# End-to-end demo of the example DAGs on a fresh machine: throwaway AIRFLOW_HOME, SQLite,
# local Spark (no connection needed). Two daily ingests into a MERGE_ON_READ table, the
# maintenance DAG (compaction, clustering, clean, archive), then the downstream DAG's
# incremental read; prints the table's timeline and row count.
#
#   dags_examples/run_demo.sh            (from the repo root, after scripts/setup)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_BIN="${VENV_BIN:-$REPO/.venv/bin}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$(mktemp -d "${TMPDIR:-/tmp}/airflow-hoodie-demo-XXXX")}"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags_examples"
TABLE="${HOODIE_EXAMPLE_BASE_PATH:-$AIRFLOW_HOME/hoodie_example/tables/trips}"
echo "AIRFLOW_HOME=$AIRFLOW_HOME  table=$TABLE"

"$VENV_BIN/airflow" db migrate >/dev/null
run() {  # quiet unless the DAG run fails
  local log="$AIRFLOW_HOME/demo-$1-${2:-now}.log"
  echo "== airflow dags test $*"
  if ! "$VENV_BIN/airflow" dags test "$@" >"$log" 2>&1 || grep -q "state=failed" "$log"; then
    tail -50 "$log"; echo "FAILED: see $log"; exit 1
  fi
  grep -E "new or changed rows" "$log" || true
}
run hoodie_example_ingest 2024-01-01
run hoodie_example_ingest 2024-01-02
run hoodie_example_maintenance
run hoodie_example_downstream

"$VENV_BIN/airflow-hoodie" timeline "$TABLE"
"$VENV_BIN/python" - "$TABLE" <<'PY'
import sys
from airflow_hoodie.table.read import read_table
path = sys.argv[1]
print("snapshot rows:", read_table(path).num_rows,
      "| read-optimized rows:", read_table(path, query_type="read_optimized").num_rows)
PY
