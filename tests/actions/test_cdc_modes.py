"""CDC tables in each of Hudi's supplemental logging modes (OP_KEY_ONLY, DATA_BEFORE,
DATA_BEFORE_AFTER) on table versions 6 and 9, against the change model of test_cdc.

* The .cdc records a COW merge writes, decoded by the test-only decoder, are exactly the model's
  changes in the mode's form (HoodieCDCLogger's transformers), under the mode's schema
  (HoodieCDCUtils: field names, order, union order, defaults).
* ``read_table(query_type="cdc")`` rebuilds the images the mode leaves out and returns the
  model's change list, on COW and on MOR (delta commits and a compaction).
* insert_overwrite / insert_overwrite_table on a CDC table: the replaced groups' rows are
  deletes, the new groups' rows inserts (REPLACE_COMMIT, BASE_FILE_INSERT).
* What we cannot write correctly is refused before any change.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.table_versions import (  # noqa: F401
    current_version,
    table_version,
    version_settings,
)
from tests.actions.test_cdc import (
    DATA_COLUMNS,
    ChangeModel,
    conf,
    decode_cdc_blocks,
    normalized,
    rows_table,
)

pytestmark = pytest.mark.usefixtures("table_version")

MODES = ["OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"]

#: the record fields of each mode, in order (HoodieCDCUtils.schemaBySupplementalLoggingMode)
MODE_FIELDS = {"OP_KEY_ONLY": ["op", "record_key"], "DATA_BEFORE": ["op", "record_key", "before"],
               "DATA_BEFORE_AFTER": ["op", "ts_ms", "before", "after"]}


def mode_conf(mode: str, **extra: str) -> dict[str, str]:
    return conf(**{"hoodie.table.cdc.supplemental.logging.mode": mode, **extra})


def as_logged(mode: str, change: tuple) -> tuple:
    """A model change (op, instant, before, after) in the form ``mode`` logs it."""
    op, instant, before, after = change
    key = str((before or after)["id"])
    if mode == "OP_KEY_ONLY":
        return op, key
    if mode == "DATA_BEFORE":
        return op, key, None if before is None else repr(sorted(before.items()))
    return (op, instant, None if before is None else repr(sorted(before.items())),
            None if after is None else repr(sorted(after.items())))


def check_schema(mode: str, schema: dict) -> None:
    """The block's writer schema is Hudi's for the mode."""
    assert [f["name"] for f in schema["fields"]] == MODE_FIELDS[mode]
    if mode == "OP_KEY_ONLY":
        assert schema == {"type": "record", "name": "Record", "fields": [
            {"name": "op", "type": ["string", "null"]}, {"name": "record_key", "type": ["string", "null"]}]}
        return
    assert schema["name"] == "CDC"
    for f in schema["fields"]:
        assert f["doc"] == "" and f["default"] is None and f["type"][0] == "null", f
    for name in ("before", "after"):
        image = next((f["type"][1] for f in schema["fields"] if f["name"] == name), None)
        if isinstance(image, dict):
            assert [x["name"] for x in image["fields"]] == list(DATA_COLUMNS)


def logged_records(base: str, instant: str, mode: str) -> list[tuple]:
    """The commit's .cdc records in ``mode``'s form, plus the inserts of its new file groups
    (read from their base files, as Hudi infers them: BASE_FILE_INSERT)."""
    meta = HoodieTable.load(base).timeline.commit_metadata(instant)
    out = []
    for _partition, stat in meta.iter_write_stats():
        if stat.cdc_stats:
            for rel, size in stat.cdc_stats.items():
                path = os.path.join(base, rel)
                assert os.path.getsize(path) == size
                for schema, records in decode_cdc_blocks(path):
                    check_schema(mode, schema)
                    for r in records:
                        assert list(r) == MODE_FIELDS[mode]
                        values = [r[f] for f in MODE_FIELDS[mode]]
                        out.append(tuple(repr(sorted(v.items())) if isinstance(v, dict) else v for v in values))
        else:
            assert stat.num_update_writes == 0 and stat.num_deletes == 0 and stat.num_inserts == stat.num_writes
            rows = pq.read_table(os.path.join(base, stat.path)).select(list(DATA_COLUMNS)).to_pylist()
            out += [as_logged(mode, ("i", instant, None, r)) for r in rows]
    return sorted(out, key=repr)


def expected_logged(mode: str, changes: list[tuple]) -> list[tuple]:
    return sorted((as_logged(mode, c) for c in changes), key=repr)


def cdc_rows(base: str, **window: str | None) -> list[tuple]:
    return sorted(tuple(x.values()) for x in read_table(base, query_type="cdc", **window).to_pylist())


@pytest.mark.parametrize("mode", MODES)
def test_cow_logs_each_mode_and_query_rebuilds_images(tmp_path, mode):
    """An upsert (updates, inserts into existing small groups, new groups) and a delete on COW:
    the .cdc records are the model's changes in the mode's form; the CDC query equals the model."""
    base, c = str(tmp_path / "t"), mode_conf(mode)
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a" if i % 2 else "b", "v": f"v{i}"} for i in range(10)]
    r = write_arrow(base, rows_table(first), "upsert", c, table_name="t")
    expected += (step := model.upsert(first, r.instant))
    assert logged_records(base, r.instant, mode) == expected_logged(mode, step)
    second = [{"id": i, "ts": 2, "p": "a" if i % 2 else "b", "v": f"w{i}"} for i in [1, 2, 3, *range(10, 30)]]
    r = write_arrow(base, rows_table(second), "upsert", c, table_name="t")
    expected += (step := model.upsert(second, r.instant))
    stats = HoodieTable.load(base).timeline.commit_metadata(r.instant).write_stats
    assert any(s.cdc_stats for s in stats) and any(not s.cdc_stats for s in stats), "merged and new groups"
    assert logged_records(base, r.instant, mode) == expected_logged(mode, step)
    gone = [2, 5, 11]
    r = write_arrow(base, rows_table([{**model.rows[k], "ts": 3} for k in gone]), "delete", c, table_name="t")
    expected += (step := model.delete(gone, r.instant))
    assert logged_records(base, r.instant, mode) == expected_logged(mode, step)
    assert cdc_rows(base) == normalized(expected)


@pytest.mark.parametrize("mode", MODES)
def test_mor_query_and_compaction_log_in_each_mode(tmp_path, mode):
    """MOR delta commits carry no .cdc log where they append (LOG_FILE inference), an insert into
    a group with a base file only merges it and logs it (AS_IS); a compaction whose write config
    has a pure-log index (BUCKET) logs what it merged in the table's mode; the CDC query equals the model throughout, and the .cdc logs
    in the slices never reach a snapshot read (HoodieLogFile.isCDC)."""
    from airflow_hoodie.actions import compaction as cp
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig

    # Hudi's default file sizes: an insert into partition c's one (small, base-only) group merges it
    base, c = str(tmp_path / "t"), mode_conf(mode, **{"hoodie.table.type": "MERGE_ON_READ",
                                                     "hoodie.parquet.small.file.limit": "104857600",
                                                     "hoodie.parquet.max.file.size": "125829120"})
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a", "v": f"v{i}"} for i in range(6)] + [{"id": 100, "ts": 1, "p": "c", "v": "c"}]
    r = write_arrow(base, rows_table(first), "upsert", c, table_name="t")
    expected += model.upsert(first, r.instant)
    second = [{"id": 1, "ts": 2, "p": "a", "v": "w1"}, {"id": 7, "ts": 2, "p": "a", "v": "n7"},
              {"id": 101, "ts": 2, "p": "c", "v": "n101"}]
    r = write_arrow(base, rows_table(second), "upsert", c, table_name="t")
    expected += model.upsert(second, r.instant)
    assert any(s.cdc_stats for s in HoodieTable.load(base).timeline.commit_metadata(r.instant).write_stats)
    assert sorted(read_table(base).column("id").to_pylist()) == sorted(model.rows)
    r = write_arrow(base, rows_table([{**model.rows[2], "ts": 3}]), "delete", c, table_name="t")
    expected += model.delete([2], r.instant)
    assert cdc_rows(base) == normalized(expected)
    assert sorted(read_table(base).column("id").to_pylist()) == sorted(model.rows)
    # the compaction logs what it merged only with a pure-log index in its write config (Hudi's
    # HoodieMergeHandleFactory; test_cdc checks the default writes none): BUCKET here, so its
    # records can be checked in each mode
    bucket = HoodieConfig({"hoodie.index.type": "BUCKET"})
    sched = cp.schedule_compaction(HoodieTable.load(base), bucket, force=True)
    cp.execute_compaction(HoodieTable.load(base), sched.instant.timestamp, LocalExecutor(), bucket)
    meta = HoodieTable.load(base).timeline.commit_metadata(sched.instant.timestamp)
    logged = []
    for s in meta.write_stats:
        for rel in s.cdc_stats or {}:
            for schema, records in decode_cdc_blocks(os.path.join(base, rel)):
                check_schema(mode, schema)
                logged += [tuple(repr(sorted(v.items())) if isinstance(v, dict) else v
                                 for v in (x[f] for f in MODE_FIELDS[mode])) for x in records]
    # the delete of 2 sat in a log only: the compaction merges it into the base file, and logs it
    deleted = [x for x in logged if x[0] == "d"]
    assert len(deleted) == 1
    assert deleted[0][1] == "2" if mode != "DATA_BEFORE_AFTER" else "('id', 2)" in deleted[0][2]
    assert cdc_rows(base) == normalized(expected)
    more = [{"id": 3, "ts": 4, "p": "a", "v": "w3"}, {"id": 100, "ts": 4, "p": "c", "v": "w100"}]
    r = write_arrow(base, rows_table(more), "upsert", c, table_name="t")
    expected += model.upsert(more, r.instant)
    assert cdc_rows(base) == normalized(expected)
    assert sorted(read_table(base).column("id").to_pylist()) == sorted(model.rows)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("operation", ["insert_overwrite", "insert_overwrite_table"])
def test_insert_overwrite_on_cdc_table(tmp_path, operation, table_type):
    """The replaced groups' rows are deletes (of their last slice, logs merged), the new groups'
    rows inserts, a later upsert of the new groups is logged as usual."""
    base, c = str(tmp_path / "t"), mode_conf("OP_KEY_ONLY", **{"hoodie.table.type": table_type})
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a" if i % 2 else "b", "v": f"v{i}"} for i in range(8)]
    r = write_arrow(base, rows_table(first), "upsert", c, table_name="t")
    expected += model.upsert(first, r.instant)
    upd = [{"id": 1, "ts": 2, "p": "a", "v": "w1"}]
    r = write_arrow(base, rows_table(upd), "upsert", c, table_name="t")
    expected += model.upsert(upd, r.instant)
    new = [{"id": i, "ts": 3, "p": "a", "v": f"o{i}"} for i in (1, 3, 21)]
    r = write_arrow(base, rows_table(new), operation, c, table_name="t")
    scope = {"a"} if operation == "insert_overwrite" else {"a", "b"}
    expected += model.delete(sorted(k for k, row in model.rows.items() if row["p"] in scope), r.instant)
    expected += model.upsert(new, r.instant)
    meta = HoodieTable.load(base).timeline.commit_metadata(r.instant)
    assert set(meta.partition_to_replace_file_ids) == scope
    assert cdc_rows(base) == normalized(expected)
    later = [{"id": 21, "ts": 4, "p": "a", "v": "x21"}, {"id": 30, "ts": 4, "p": "a", "v": "n30"}]
    r = write_arrow(base, rows_table(later), "upsert", c, table_name="t")
    expected += model.upsert(later, r.instant)
    assert cdc_rows(base) == normalized(expected)
    assert sorted(read_table(base).column("id").to_pylist()) == sorted(model.rows)


def test_key_modes_without_meta_fields_refused_before_any_change(tmp_path):
    """The CDC query finds the images of OP_KEY_ONLY / DATA_BEFORE logs by the record keys the
    data files store; a table that stores none is refused before anything is written."""
    base = str(tmp_path / "t")
    with pytest.raises(HoodieNotSupportedError, match="OP_KEY_ONLY.*populate.meta.fields"):
        write_arrow(base, rows_table([{"id": 1, "ts": 1, "p": "a", "v": "x"}]), "upsert",
                    mode_conf("OP_KEY_ONLY", **{"hoodie.populate.meta.fields": "false"}), table_name="t")
    assert not os.path.exists(base)


@pytest.mark.parametrize("mode", ["op_key_only", "data_before"])
def test_mode_stored_as_the_release_line_spells_it(tmp_path, mode):
    base = str(tmp_path / "t")
    write_arrow(base, rows_table([{"id": 1, "ts": 1, "p": "a", "v": "x"}]), "upsert", mode_conf(mode), table_name="t")
    stored = HoodieTable.load(base).config["hoodie.table.cdc.supplemental.logging.mode"]
    assert stored == (mode if current_version() == 6 else mode.upper())
