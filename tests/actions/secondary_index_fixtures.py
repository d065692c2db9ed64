"""Tables with secondary indexes for the tests of keeping them: copies of the v9 tables Hudi
1.1 wrote (two V2 indexes each), and v8 tables our writer creates, whose V1 index a test-only
builder makes from empty file groups through the writer's own reconciliation (the indexer job
that builds indexes is another piece of work), and the check every step runs: every record
of every index, in base HFiles and in log blocks, sits in the file group Hudi's mapping gives
it, and the live entries are exactly those of the rows hudi-rs and our reader read."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.files_bootstrap import (
    partition_init_instant,
    write_empty_log,
)
from airflow_hoodie.actions.metadata_table.secondary_index_writer import (
    append_secondary_index,
    kept_secondary_indexes,
    reconcile_secondary_indexes,
)
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import read_log_blocks
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.metadata_record import (
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    entry_file_group,
    file_group_id,
    index_values,
    live_keys,
    secondary_index_definitions,
    secondary_index_entries,
    secondary_index_key,
)
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.instant import Action, Instant, State

#: no clock-skew wait (one writer); the metadata table compacts every second delta commit
FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0", "hoodie.metadata.compact.max.delta.commits": "2"}
#: values the key escaping must get right
AWKWARD = ["A$b\\c", "x\\$", "$", "\\"]


def v8_rows(ids: range, merchant: str = "m") -> pa.Table:
    return pa.table({
        "txn_id": [f"T{i:03d}" for i in ids],
        "txn_ts": pa.array([1] * len(ids), pa.int64()),
        "region": [("us", "eu", "apac")[i % 3] for i in ids],
        "merchant_name": [None if i % 7 == 3 else f"{merchant}{i % 4}" for i in ids],
        "txn_date": pa.array([dt.date(2024, 1, 1 + i % 5) for i in ids], pa.date32()),
    })


def _build_index(base: Path, name: str, field: str, version: str, groups: int) -> None:
    """Define ``name`` on ``field`` in index.json and build its partition: ``groups`` empty
    file groups (an initialization delta commit), listed, then the entries of the table's
    rows as the writer's reconciliation finds them missing, in a second one."""
    table = HoodieTable.load(str(base))
    rel = ".hoodie/.index_defs/index.json"
    path = base / rel
    defs = json.loads(path.read_text()) if path.exists() else {"indexDefinitions": {}}
    defs["indexDefinitions"][name] = {"indexName": name, "indexType": "secondary_index", "indexFunction": "identity",
                                      "sourceFields": [field], "indexOptions": {}, "version": version}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(defs))
    table.update_config({"hoodie.table.index.defs.path": rel})
    mdt = table.metadata_table()
    schema = metadata_record_schema_json(mdt.format.version)
    for step in ("groups", "entries"):
        instant = partition_init_instant(table, mdt.reload_timeline())
        writer = mdt.timeline_writer()
        writer.create_requested(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
        writer.transition_to_inflight(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
        meta = CommitMetadata(operation_type="BULK_INSERT_PREPPED", extra_metadata={"schema": schema})
        if step == "groups":
            write_partition_metadata(table.storage, mdt.base_path, name, instant)
            for i in range(groups):
                write_empty_log(mdt, name, file_group_id(name, i), instant)
        else:
            definitions = [d for d in kept_secondary_indexes(table) if d.name == name]
            append_secondary_index(mdt, instant, reconcile_secondary_indexes(table, definitions), meta)
        commit.complete(mdt, Instant(instant, Action.DELTA_COMMIT, State.INFLIGHT), meta)
        if step == "groups":
            listed = listed_in(table.config, METADATA_PARTITIONS)
            table.update_config({METADATA_PARTITIONS: ",".join(sorted({*listed, name}))})


def v8_table_with_index(tmp_path: Path, table_type: str, groups: int = 3) -> Path:
    """A version-8 table our writer made, with V1 indexes on merchant_name and txn_date."""
    base = tmp_path / f"v8_{table_type.lower()}"
    cfg = {**FAST, "hoodie.write.table.version": "8", "hoodie.datasource.write.recordkey.field": "txn_id",
           "hoodie.datasource.write.partitionpath.field": "region", "hoodie.datasource.write.precombine.field": "txn_ts",
           "hoodie.table.type": table_type, "hoodie.metadata.enable": "true"}
    write_arrow(str(base), v8_rows(range(12)), "upsert", cfg, table_name="v8_si")
    _build_index(base, "secondary_index_merchant_idx", "merchant_name", "V1", groups)
    _build_index(base, "secondary_index_txn_date_idx", "txn_date", "V1", groups)
    return base


def _hudi_rs(base: Path) -> pa.Table:
    from hudi import HudiReadOptions, HudiTableBuilder

    return pa.Table.from_batches(list(HudiTableBuilder.from_base_uri(str(base)).build().read(HudiReadOptions())))


def _row_entries(rows: pa.Table, field: str) -> set[str]:
    if not rows.num_rows:
        return set()
    return {secondary_index_key(v, k) for v, k in zip(index_values(rows[field]), rows["_hoodie_record_key"].to_pylist())}


def _stored_records(folder: Path) -> list[tuple[str, str, str]]:
    """(key, file id, file name) of every record in the partition folder: base HFiles and the
    HFile and delete blocks of every log file, whatever their instant."""
    out = []
    for path in sorted(folder.iterdir()):
        name = path.name.lstrip(".")
        file_id = name.split("_", 1)[0]
        if name.endswith(".hfile"):
            out += [(k.decode("utf-8"), file_id, name) for k, _ in HFile(path.read_bytes(), str(path)).records()]
        elif ".log." in name:
            from airflow_hoodie.table.storage.storage import Storage

            storage, local = Storage.for_uri(str(path))
            for block in read_log_blocks(storage, local):
                if block.block_type == BlockType.HFILE_DATA:
                    out += [(k.decode("utf-8"), file_id, name) for k, _ in HFile(block.content or b"", name).records()]
    return out


def check_indexes(base: Path, step: str, storage_options: dict[str, Any] | None = None) -> dict[str, int]:
    """Every index record in its file group; live entries == the rows' (ours and hudi-rs).
    Returns the live entry count per index."""
    table = HoodieTable.load(str(base))
    definitions = secondary_index_definitions(table)
    assert definitions, step
    ours = read_table(str(base))
    theirs = _hudi_rs(base)
    counts = {}
    for d in definitions:
        folder = base / ".hoodie" / "metadata" / d.name
        records = _stored_records(folder)
        count = len({fid for _, fid, _ in records} | {p.name.lstrip(".").split("_", 1)[0] for p in folder.iterdir()
                                                      if p.name.lstrip(".").startswith(d.name.replace("_", "-"))})
        misplaced = [(k, fid, n) for k, fid, n in records if file_group_id(d.name, entry_file_group(k, count, d.version))
                     != fid]
        assert misplaced == [], f"{step}: {d.name} records outside their file group"
        live = live_keys(secondary_index_entries(table, d))
        expected = _row_entries(ours, d.source_field)
        assert _row_entries(theirs, d.source_field) == expected, f"{step}: hudi-rs and our reader differ"
        assert live == expected, (f"{step}: {d.name} missing {sorted(expected - live)[:5]} "
                                  f"extra {sorted(live - expected)[:5]}")
        counts[d.name] = len(live)
    return counts
