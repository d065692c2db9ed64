"""``airflow-hoodie``: look inside a Hudi table from a shell.

Subcommands::

    airflow-hoodie timeline PATH                 active and archived instants with their states
    airflow-hoodie slices PATH [--as-of T] [--partition P]
                                                 the file slices a reader would use
    airflow-hoodie log FILE [--records]          the blocks of one log file
    airflow-hoodie show PATH INSTANT             an instant's plan or commit metadata as JSON
    airflow-hoodie read PATH [--query-type ...]  rows of the table
    airflow-hoodie health PATH [--json]          pending/stuck instants, files, services due
    airflow-hoodie stats PATH FILE               a data file's column statistics (metadata table)

Every table version the provider reads (6, 8 and 9) is shown alike: on 8 and 9 instants
carry their completion times, and archived instants come from the LSM timeline.

Output is a human-readable table by default and JSON with ``--json`` (one document per
command, ``read`` prints JSON lines with ``--format jsonl``). Every error the library
raises on purpose (:class:`~airflow_hoodie.errors.HoodieError`) is printed as one line on
stderr with exit code 2, without a traceback: the message already says what to do.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Iterable, Sequence, TextIO

from airflow_hoodie.cli.file_stats import file_stats_rows
from airflow_hoodie.cli.instant_details import STATE_NAMES, instant_details
from airflow_hoodie.cli.output import dump_json, print_table, to_jsonable
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.health.table_health import table_health
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.log_reader import describe_log_file
from airflow_hoodie.table.read import normalize_query_time, read_table
from airflow_hoodie.table.storage.storage import Storage

EXIT_OK = 0
EXIT_ERROR = 2


# ---------------------------------------------------------------------------- helpers
def _connection_storage_options(conn_id: str) -> dict[str, str]:
    """The storage options of ``hoodie`` connection ``conn_id`` (its ``aws_conn_id`` included),
    read as the operators read it, from wherever ``airflow connections get`` finds it (the
    metadata database, ``AIRFLOW_CONN_*`` variables, a secrets backend). Airflow is imported
    only here: the CLI without ``--conn-id`` needs none."""
    from airflow.sdk.exceptions import AirflowNotFoundException

    from airflow_hoodie.hooks.hoodie import HoodieHook

    try:
        return dict(HoodieHook(conn_id).get_conn().storage_options)
    except AirflowNotFoundException as exc:
        raise HoodieError(f"--conn-id {conn_id!r}: no such Airflow connection; create it (airflow connections "
                          "add) or check the name with `airflow connections list`.") from exc


def _storage_options(args: argparse.Namespace) -> dict[str, str]:
    """``--conn-id``'s storage options, then each ``--storage-option`` over them."""
    conn_id = getattr(args, "conn_id", None)
    out: dict[str, str] = _connection_storage_options(conn_id) if conn_id else {}
    out.update(_key_values(getattr(args, "storage_option", None), "--storage-option"))
    return out


def _key_values(pairs: Sequence[str] | None, flag: str) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` flags as a mapping (the value kept as given)."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise HoodieError(f"{flag} {pair!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def _load_table(path: str, args: argparse.Namespace) -> Any:

    table = HoodieTable.load(path, storage_options=_storage_options(args) or None)
    table.use_metadata_table = True  # the CLI only reads: list as Hudi's readers do
    return table


# ---------------------------------------------------------------------------- timeline
def timeline_rows(table: HoodieTable) -> list[dict[str, Any]]:
    """Archived instants (oldest) then active ones, each with action and state."""
    rows: list[dict[str, Any]] = []
    archived_error = None
    try:
        archived = table.archived_timeline()
        for inst in getattr(archived, "instants", None) or []:
            rows.append(_instant_row(inst, "archived"))
    except ImportError:
        archived_error = "archived timeline reader not available"
    except HoodieError as exc:
        archived_error = str(exc)
    for inst in table.timeline.instants:
        rows.append(_instant_row(inst, "active"))
    if archived_error:
        rows.append({"timestamp": "", "action": "", "state": "", "timeline": f"archived: {archived_error}"})
    return rows


def _instant_row(inst: Any, where: str) -> dict[str, Any]:
    state = getattr(inst, "state", "")
    return {
        "timestamp": inst.timestamp,
        "action": inst.action,
        "state": getattr(state, "name", str(state)),
        "completion_time": getattr(inst, "completion_time", None),
        "timeline": where,
    }


def cmd_timeline(args: argparse.Namespace, out: TextIO) -> int:
    table = _load_table(args.path, args)
    rows = timeline_rows(table)
    if args.json:
        dump_json({"table": table.table_name, "table_type": table.table_type, "instants": rows}, out)
    else:
        out.write(f"{table.table_name} ({table.table_type}) at {args.path}\n")
        columns = ["timestamp", "action", "state", "timeline"]
        if any(r.get("completion_time") for r in rows):  # table version 8+: completion times exist
            columns.insert(3, "completion_time")
        print_table([{**r, "completion_time": r.get("completion_time") or ""} for r in rows], columns, out)
    return EXIT_OK


# ------------------------------------------------------------------------------ slices
def slice_rows(table: HoodieTable, as_of: str | None = None, partition: str | None = None) -> list[dict[str, Any]]:
    table.check_supported()
    view = table.file_system_view()
    if partition is not None and partition.strip("/") not in view.partitions():
        known = view.partitions()
        near = [p for p in known if p.lower() == partition.strip("/").lower()]
        raise HoodieError(
            f"No partition {partition!r} in {table.base_uri}"
            + (f"; partition paths are case-sensitive: did you mean {near[0]!r}?" if near else "")
            + f" It has {len(known)} partitions" + (f", e.g. {', '.join(repr(p) for p in known[:5])}." if known else "."))
    slices = view.latest_merged_file_slices(partition.strip("/") if partition is not None else None, as_of=as_of)
    rows = []
    for s in slices:
        base = s.base_file
        rows.append(
            {
                "partition": s.partition_path,
                "file_id": s.file_id,
                "base_instant": s.base_instant,
                "base_file": base.file_name if base else None,
                "base_size": base.size if base else None,
                "log_files": [lf.file_name for lf in s.log_files],
                "log_size": sum(lf.size for lf in s.log_files),
            }
        )
    return rows


def cmd_slices(args: argparse.Namespace, out: TextIO) -> int:
    table = _load_table(args.path, args)

    rows = slice_rows(table, normalize_query_time(args.as_of), args.partition)
    if args.json:
        dump_json(rows, out)
    else:
        flat = [dict(r, log_files=", ".join(r["log_files"]) or "-") for r in rows]
        print_table(flat, ["partition", "file_id", "base_instant", "base_file", "base_size", "log_files", "log_size"], out, width=80)
    return EXIT_OK


# --------------------------------------------------------------------------------- log
def cmd_log(args: argparse.Namespace, out: TextIO) -> int:

    storage, path = Storage.for_uri(args.file, _storage_options(args) or None)
    if not storage.exists(path):
        raise HoodieError(f"log file {args.file} does not exist")
    blocks = describe_log_file(storage, path, with_records=args.records)
    if args.json:
        dump_json({"file": args.file, "blocks": blocks}, out)
        return EXIT_OK
    out.write(f"{args.file}: {len(blocks)} block(s)\n")
    rows = []
    for b in blocks:
        headers = {k: v for k, v in (b.get("headers") or {}).items() if k != "SCHEMA"}
        rows.append(
            {
                "offset": b.get("offset"),
                "size": b.get("size"),
                "type": b.get("type"),
                "version": b.get("version"),
                "records": b.get("record_count"),
                "corrupt": "CORRUPT" if b.get("corrupt") else "",
                "headers": ", ".join(f"{k}={v}" for k, v in headers.items()),
            }
        )
    print_table(rows, ["offset", "size", "type", "version", "records", "corrupt", "headers"], out, width=100)
    for b in blocks:
        if b.get("error"):
            out.write(f"block at {b.get('offset')}: {b['error']}\n")
        if args.records and b.get("records") is not None:
            out.write(f"\n-- records of block at offset {b.get('offset')} ({b.get('type')})\n")
            for rec in b["records"]:
                out.write(json.dumps(to_jsonable(rec), ensure_ascii=False, sort_keys=False) + "\n")
    return EXIT_OK


# -------------------------------------------------------------------------------- show
def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    table = _load_table(args.path, args)
    details = instant_details(table, args.instant, args.state)
    dump_json(details, out)
    return EXIT_OK


# -------------------------------------------------------------------------------- read
def cmd_read(args: argparse.Namespace, out: TextIO) -> int:

    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    filters = [_parse_filter(f) for f in args.filter or []]
    table = read_table(
        args.path,
        query_type=args.query_type,
        as_of=args.as_of,
        start=args.start,
        end=args.end,
        columns=columns,
        filters=filters or None,
        storage_options=_storage_options(args) or None,
    )
    total = table.num_rows
    if total == 0 and filters:
        _check_partition_filters(args.path, filters, _storage_options(args) or None)
    if args.limit is not None:
        table = table.slice(0, max(0, args.limit))
    rows = table.to_pylist()
    fmt = "jsonl" if args.json else args.format
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(to_jsonable(row), ensure_ascii=False) + "\n")
    else:
        print_table(rows, table.column_names, out, width=40)
        shown = f"{len(rows)} of {total}" if len(rows) != total else str(total)
        out.write(f"({shown} rows)\n" if rows else "")
    return EXIT_OK


def _check_partition_filters(path: str, filters: list[tuple[str, str, Any]],
                             storage_options: dict[str, str] | None) -> None:
    """An empty answer to ``region=EU`` where the partitions are ``eu`` looks like "no
    data"; a filter naming a partition value that no partition has is an error instead."""
    from airflow_hoodie.table.partition_spec import PartitionSpec

    table = HoodieTable.load(path, storage_options=storage_options)
    spec = PartitionSpec.from_config(table.config)
    if not spec.value_mappable:
        # a timestamp or custom key generator writes formatted paths, not column values: the
        # paths cannot tell whether a value exists, and an empty answer may be the right one
        return
    partitions = table.file_system_view().partitions()
    for col, op, value in filters:
        if col not in spec.fields or op not in ("=", "==", "in"):
            continue
        wanted = [str(v) for v in (value if isinstance(value, list) else [value])]
        # this field's values only: with region and country, country=de does not make region=de exist
        present = {str(v) for p in partitions if (v := (spec.values(p) or {}).get(col)) is not None}
        if any(w in present for w in wanted):
            continue
        near = sorted(v for v in present if v.lower() in {w.lower() for w in wanted})
        raise HoodieError(
            f"No partition of {table.base_uri} has {col} {op} {value!r}"
            + (f"; partition values are case-sensitive: did you mean {near[0]!r}?" if near else "")
            + f" Values of {col}: {', '.join(sorted(present)[:10]) or 'none'}.")


_FILTER_OPS = ("not in", ">=", "<=", "!=", "==", "=", ">", "<", " in ")


def _parse_filter(text: str) -> tuple[str, str, Any]:
    """``col=value``, ``col>=value``, ``col in a|b|c``, ``col not in a|b`` -> a filter tuple."""
    for op in _FILTER_OPS:
        idx = text.find(op)
        if idx > 0:
            col, value = text[:idx].strip(), text[idx + len(op):].strip()
            op = op.strip()
            if op in ("in", "not in"):
                return (col, op, [v.strip() for v in value.split("|")])
            return (col, op, value)
    raise HoodieError(f"--filter {text!r} is not COLUMN OP VALUE (ops: =, !=, <, <=, >, >=, in, not in)")


# ------------------------------------------------------------------------------- stats
def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    table = _load_table(args.path, args)
    rows = file_stats_rows(table, args.file)
    if args.json:
        dump_json(rows, out)
    else:
        print_table(rows, ["column", "min", "max", "null_count", "value_count", "total_size", "value_type"], out,
                    width=60)
    return EXIT_OK


# -------------------------------------------------------------------------------- main
# ------------------------------------------------------------------------------ health
def cmd_health(args: argparse.Namespace, out: TextIO) -> int:
    conf = {k: v.strip() for k, v in _key_values(args.hoodie_conf, "--hoodie-conf").items()}
    health = table_health(args.path, _storage_options(args) or None, conf)
    if args.json:
        dump_json(health, out)
        return EXIT_OK
    out.write(health["summary"] + "\n")
    rows = [{"instant": p["instant"], "action": p["action"], "state": p["state"], "age_s": p["age_seconds"],
             "heartbeat": {True: "live", False: "DEAD", None: "waiting plan"}[p["heartbeat_live"]]}
            for p in health["pending"]]
    if rows:
        print_table(rows, ["instant", "action", "state", "age_s", "heartbeat"], out, width=40)
    print_table([{"service": d["service"], "due": "DUE" if d["due"] else "-", "reason": d["reason"]}
                 for d in health["maintenance_due"]], ["service", "due", "reason"], out, width=120)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="airflow-hoodie",
        description="Inspect Apache Hudi tables (timeline, file slices, log files, instants, rows).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="machine-readable JSON output")
        p.add_argument(
            "--storage-option",
            action="append",
            metavar="KEY=VALUE",
            help="pyarrow filesystem option for remote storage (repeatable; over --conn-id's)",
        )
        p.add_argument("--conn-id", help="an Airflow 'hoodie' connection whose storage options (its "
                       "aws_conn_id's credentials, region and endpoint included) reach the table")

    p = sub.add_parser("timeline", help="list active and archived instants with their states")
    p.add_argument("path", help="table base path or URI")
    common(p)
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("slices", help="list the latest file slices (base file + log files)")
    p.add_argument("path")
    p.add_argument("--as-of", help="instant time to travel to")
    p.add_argument("--partition", help="only this partition path")
    common(p)
    p.set_defaults(func=cmd_slices)

    p = sub.add_parser("log", help="list the blocks of a log file")
    p.add_argument("file", help="path or URI of a .log file")
    p.add_argument("--records", action="store_true", help="also print each block's records")
    common(p)
    p.set_defaults(func=cmd_log)

    p = sub.add_parser("show", help="print an instant's plan or metadata as JSON")
    p.add_argument("path")
    p.add_argument("instant", help="instant time (or instant file name)")
    p.add_argument("--state", choices=sorted(STATE_NAMES), help="which state's file to show")
    common(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("read", help="print rows of the table")
    p.add_argument("path")
    p.add_argument("--query-type", default="snapshot", choices=["snapshot", "read_optimized", "incremental"])
    p.add_argument("--as-of", help="time travel: instant time")
    p.add_argument("--start", help="incremental: exclusive start; an instant time on table version 6, a "
                   "completion time on 8/9 (the 'checkpoint' our sensors, results and Asset events give)")
    p.add_argument("--end", help="incremental: inclusive end, in the same time as --start")
    p.add_argument("--columns", help="comma-separated columns")
    p.add_argument("--filter", action="append", metavar="EXPR", help="e.g. 'city=sf', 'fare>=10', 'id in 1|2' (repeatable, AND)")
    p.add_argument("--format", default="table", choices=["table", "jsonl"])
    p.add_argument("--limit", type=int, help="print at most N rows")
    common(p)
    p.set_defaults(func=cmd_read)

    p = sub.add_parser("health", help="the table's health: pending and stuck instants, files, metadata "
                       "table, lock, services due")
    p.add_argument("path", help="table base path or URI")
    p.add_argument("--hoodie-conf", action="append", metavar="KEY=VALUE",
                   help="a write setting the services run with (keep.min/max, cleaner, compaction trigger)")
    common(p)
    p.set_defaults(func=cmd_health)

    p = sub.add_parser("stats", help="print a data file's column statistics from the metadata table")
    p.add_argument("path", help="table base path or URI")
    p.add_argument("file", help="the data file's path under the table, e.g. 2024/01/15/<file>.parquet")
    common(p)
    p.set_defaults(func=cmd_stats)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    func: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        return func(args, out)
    except HoodieError as exc:
        err.write(f"airflow-hoodie {args.command}: {exc}\n")
        return EXIT_ERROR
    except BrokenPipeError:  # `airflow-hoodie read ... | head`
        return EXIT_OK


__all__: Iterable[str] = ["main", "build_parser", "instant_details", "slice_rows", "timeline_rows"]
