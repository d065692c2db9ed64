"""A spark-submit stand-in for cluster deploy mode, where the driver's output never reaches
the submitting task: it starts the real job on local Spark detached, then prints what the
cluster manager prints once it has accepted the driver."""

from __future__ import annotations

_SCRIPT = r"""#!/bin/bash
# COMMENT
PREAMBLE
args=()
skip=0
for arg in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$arg" in
    --master) args+=("--master" "local[1]"); skip=1 ;;
    --deploy-mode) skip=1 ;;
    *) args+=("$arg") ;;
  esac
done
setsid bash -c '"$0" "$@" > "$STATE/driver.log" 2>&1; echo $? > "$STATE/exit"' \
  "$REAL_SPARK_SUBMIT" "${args[@]}" < /dev/null > /dev/null 2>&1 &
echo "ACCEPTED"
"""


def detached_submit_script(state_env: str, accepted: str, comment: str, preamble: str) -> str:
    """The script; ``$<state_env>`` names the directory of the driver's log and exit code."""
    return (_SCRIPT.replace("STATE", state_env).replace("COMMENT", comment)
            .replace("PREAMBLE", preamble).replace("ACCEPTED", accepted))
