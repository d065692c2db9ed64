"""What every ``spark_jobs/*.py`` script shares: arguments, settings, result line, exit code.

A job prints exactly one JSON object as its last stdout line (and writes it to
``--result-file``), so the Airflow hook can hand it to XCom without parsing logs. Any
failure exits non-zero with a one-line ``ERROR: ...`` on stderr that says what to do.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any, Callable, Mapping

from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig, parse_key_values, parse_properties
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.spark.session import active_session_summary
from airflow_hoodie.storage_secrets import (
    SOURCE_STORAGE_SECRETS_ENV,
    STORAGE_SECRETS_ENV,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.instant import State

EXIT_FAILURE = 1


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-path", required=True, help="Table base path or URI")
    parser.add_argument(
        "--hoodie-conf", action="append", default=[], metavar="KEY=VALUE",
        help="A hoodie.* setting; repeatable",
    )
    parser.add_argument("--props", help="A .properties file of hoodie.* settings")
    parser.add_argument("--result-file", help="Also write the JSON result here")
    parser.add_argument(
        "--storage-option", action="append", default=[], metavar="KEY=VALUE",
        help="pyarrow filesystem option (credentials, region, endpoint); repeatable",
    )
    parser.add_argument("--spark-master", help="Spark master when run as plain python")
    parser.add_argument(
        "--write-id", help="Identity of the writer (Airflow: dag_id, run_id, task_id, map_index as JSON), stored "
        "in the commit's extraMetadata: a retry finding it committed returns that instant and writes nothing",
    )
    return parser


def load_config(args: argparse.Namespace) -> HoodieConfig:
    """``--props`` first, then ``--hoodie-conf`` overriding it."""
    values: dict[str, str] = {}
    if args.props:
        try:
            with open(args.props, encoding="utf-8") as f:
                values.update(parse_properties(f.read()))
        except OSError as exc:
            raise HoodieError(f"Cannot read --props file {args.props!r}: {exc}") from exc
    values.update(parse_key_values(args.hoodie_conf))
    config = HoodieConfig(values)
    config.check_spelling()  # before any session starts
    return config


def _options_with_secrets(values: list[str] | None, env: str) -> dict[str, str]:
    """``KEY=VALUE`` arguments plus the credentials the hook put in ``$env`` (JSON)."""
    options = parse_key_values(values) if values else {}
    secrets = os.environ.get(env)
    if secrets:
        try:
            options.update({str(k): str(v) for k, v in json.loads(secrets).items()})
        except (json.JSONDecodeError, AttributeError) as exc:
            raise HoodieError(f"${env} must be a JSON object of storage options: {exc}") from exc
    return options


def storage_options(args: argparse.Namespace) -> dict[str, str]:
    """``--storage-option`` values plus the credentials from ``$HOODIE_STORAGE_SECRETS``."""
    return _options_with_secrets(args.storage_option, STORAGE_SECRETS_ENV)


def source_storage_options(args: argparse.Namespace) -> dict[str, str]:
    """The source batch's options: ``--source-storage-option`` values plus the credentials from
    ``$HOODIE_SOURCE_STORAGE_SECRETS`` when the source lives on another bucket or store, else
    the table's (a landing zone is usually on the table's store, with its credentials)."""
    own = _options_with_secrets(getattr(args, "source_storage_option", None), SOURCE_STORAGE_SECRETS_ENV)
    return own or storage_options(args)


def hudi_state(result: Mapping[str, Any]) -> dict[str, Any]:
    """The result with its instant state in Hudi's spelling (HoodieInstant.State: REQUESTED,
    INFLIGHT, COMPLETED), whichever action produced it: users compare states across jobs."""
    state = result.get("state")
    if isinstance(state, str) and state.lower() in {s.value for s in State}:
        return {**result, "state": State(state.lower()).name}
    return dict(result)


def emit_result(result: Mapping[str, Any], result_file: str | None) -> None:
    line = json.dumps(hudi_state(result), sort_keys=True, default=str)
    if result_file:
        with open(result_file, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    sys.stdout.flush()
    print(line, flush=True)


class TerminatedBySignal(SystemExit):
    """SIGTERM (Airflow's on_kill, spark-submit being stopped) turned into an exception,
    so every ``finally`` runs: locks released, our pending instant rolled back."""


def _terminate(signum: int, _frame: Any) -> None:
    raise TerminatedBySignal(128 + signum)


def _print_notes(exc: BaseException) -> None:
    """What went wrong after the cause (a failed cleanup), below the cause's own line."""
    for note in getattr(exc, "__notes__", ()):
        print(f"NOTE: {note}", file=sys.stderr, flush=True)


def run_job(main: Callable[[], Mapping[str, Any]], result_file: str | None) -> int:
    """Run ``main``; print its result last, or a clear error and return non-zero."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        result = main()
    except TerminatedBySignal:
        print("ERROR: the job was terminated (SIGTERM): the table lock was released and a pending write rolled back "
              "(a table service resumes from its plan when run again).", file=sys.stderr, flush=True)
        return EXIT_FAILURE
    except HoodieError as exc:
        print(f"ERROR: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        _print_notes(exc)
        return EXIT_FAILURE
    except Exception as exc:  # noqa: BLE001 - the job must always exit with a message
        traceback.print_exc()
        print(f"ERROR: unexpected {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return EXIT_FAILURE
    spark = active_session_summary()
    if spark is not None and "spark" not in result:
        result = {**result, "spark": spark}
    emit_result(result, result_file)
    return 0


def job_executor(args: argparse.Namespace, app_name: str):
    """Spark tasks for plan operations, or in-process with ``--local`` (small tables, tests)."""
    if getattr(args, "local", False):
        return LocalExecutor()
    from airflow_hoodie.spark.executor import SparkExecutor
    from airflow_hoodie.spark.session import get_or_create_session

    return SparkExecutor(get_or_create_session(app_name, master=args.spark_master))


def service_config(args: argparse.Namespace) -> HoodieConfig:
    """Settings of a table-service job; unknown ``hoodie.*`` keys (typos) reported on stderr
    (the whole registry is loaded before the first lookup)."""
    config = load_config(args)
    unknown = config.unknown_keys()
    if unknown:
        print("WARNING: unknown hoodie.* settings (ignored): " + ", ".join(unknown), file=sys.stderr, flush=True)
    return config


def load_table(args: argparse.Namespace) -> HoodieTable:
    return HoodieTable.load(args.base_path, storage_options(args) or None)
