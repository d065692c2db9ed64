"""Merge modes on write and read: several ordering fields compared as a tuple, commit-time
ordering (the latest write wins whatever its ordering values), CUSTOM refused with the table
untouched, table versions we do not write refused.

Version 6 tables carry the 1.x merge mode in hoodie.properties here (a version 6 table may);
the semantics are the same for versions 8 and 9, whose writes the table layer enables.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieConfigError, HoodieKeyError, HoodieNotSupportedError
from airflow_hoodie.table import properties as tp
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_write import conf
from tests.table.normalize import hudi_rs_rows, normalize_table

TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


def rows(*recs: tuple) -> pa.Table:
    """(id, ts, seq, v) records, all in partition 'a'."""
    return pa.table({"id": [r[0] for r in recs], "ts": pa.array([r[1] for r in recs], pa.int64()),
                     "seq": pa.array([r[2] for r in recs], pa.int32()), "p": ["a"] * len(recs),
                     "v": [r[3] for r in recs]})


def tuple_conf(table_type: str, **extra: str) -> dict:
    return one_ordering_spelling(conf(table_type, **{"hoodie.table.ordering.fields": "ts,seq", **extra}), extra)


def one_ordering_spelling(c: dict, extra: dict) -> dict:
    """The ordering fields in one spelling: conf()'s precombine field ``ts`` beside
    ``hoodie.table.ordering.fields=ts,seq`` is refused (issue 35, C27)."""
    if "hoodie.datasource.write.precombine.field" not in extra:
        c.pop("hoodie.datasource.write.precombine.field", None)
    return c


def visible(base: Path) -> dict[int, tuple]:
    out = read_table(str(base), columns=["id", "ts", "seq", "v"]).to_pylist()
    return {r["id"]: (r["ts"], r["seq"], r["v"]) for r in out}


def files_under(base: Path) -> dict[str, bytes]:
    return {str(f.relative_to(base)): f.read_bytes() for f in sorted(base.rglob("*")) if f.is_file()}


def with_merge_mode(base: Path, mode: str) -> None:
    table = HoodieTable.load(str(base))
    table.update_config({tp.RECORD_MERGE_MODE: mode})


@pytest.mark.parametrize("table_type", TYPES)
def test_several_ordering_fields_dedupe_a_batch_as_a_tuple(tmp_path, table_type):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 1, 5, "a"), (1, 2, 0, "b"), (1, 2, 3, "winner"), (1, 1, 9, "c"),
                                (2, 7, 1, "only")),
                "upsert", tuple_conf(table_type), table_name="t")
    assert visible(base) == {1: (2, 3, "winner"), 2: (7, 1, "only")}
    # the table keeps both fields, in order
    assert HoodieTable.load(str(base)).config.ordering_fields == ["ts", "seq"]


@pytest.mark.parametrize("table_type", TYPES)
def test_several_ordering_fields_decide_against_stored_records(tmp_path, table_type):
    base = tmp_path / "t"
    cfg = tuple_conf(table_type, **{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    write_arrow(str(base), rows((1, 2, 3, "stored"), (2, 2, 3, "stored"), (3, 2, 3, "stored")), "upsert", cfg,
                table_name="t")
    with_merge_mode(base, "EVENT_TIME_ORDERING")
    # later writes name neither the fields nor the mode: the table's own decide
    later = conf(table_type)
    later.pop("hoodie.datasource.write.precombine.field")
    # 1: same ts, smaller seq -> stale; 2: same ts, greater seq -> wins; 3: smaller ts, greater seq -> stale
    write_arrow(str(base), rows((1, 2, 2, "stale"), (2, 2, 4, "newer"), (3, 1, 9, "stale")), "upsert", later)
    assert visible(base) == {1: (2, 3, "stored"), 2: (2, 4, "newer"), 3: (2, 3, "stored")}
    # a tie on every field: the later write wins
    write_arrow(str(base), rows((1, 2, 3, "tie")), "upsert", later)
    assert visible(base)[1] == (2, 3, "tie")


@pytest.mark.parametrize("table_type", TYPES)
def test_commit_time_ordering_lets_the_latest_write_win(tmp_path, table_type):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 5, 5, "first"), (2, 5, 5, "first")), "upsert",
                conf(table_type, **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}), table_name="t")
    with_merge_mode(base, "COMMIT_TIME_ORDERING")
    # an older ordering value still replaces the stored record
    write_arrow(str(base), rows((1, 1, 1, "latest")), "upsert", conf(table_type))
    # within one batch the later record wins, whatever its ordering value
    write_arrow(str(base), rows((2, 9, 9, "earlier in batch"), (2, 1, 1, "later in batch")), "upsert",
                conf(table_type))
    assert visible(base) == {1: (1, 1, "latest"), 2: (1, 1, "later in batch")}
    # a second log version older in event time: still the latest write (MOR log merging too)
    write_arrow(str(base), rows((1, 0, 0, "last")), "upsert", conf(table_type))
    assert visible(base)[1] == (0, 0, "last")


@pytest.mark.parametrize("table_type", TYPES)
def test_event_time_ordering_on_the_table_beats_the_default_payload(tmp_path, table_type):
    """Without a mode, a version 6 COW table with the default payload (OverwriteWithLatestAvroPayload)
    lets an older record replace a stored one; with EVENT_TIME_ORDERING on the table it is stale."""
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 5, 0, "stored")), "upsert", conf(table_type), table_name="t")
    with_merge_mode(base, "EVENT_TIME_ORDERING")
    write_arrow(str(base), rows((1, 4, 0, "older")), "upsert", conf(table_type))
    assert visible(base) == {1: (5, 0, "stored")}


@pytest.mark.parametrize("table_type", TYPES)
def test_custom_merge_mode_is_refused_and_the_table_untouched(tmp_path, table_type):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 5, 0, "stored")), "upsert", conf(table_type), table_name="t")
    before = files_under(base)
    for key in ("hoodie.record.merge.mode", "hoodie.write.record.merge.mode"):
        with pytest.raises(HoodieNotSupportedError, match="CUSTOM"):
            write_arrow(str(base), rows((1, 9, 0, "custom")), "upsert", conf(table_type, **{key: "CUSTOM"}))
    assert files_under(base) == before
    # a new table is not even started
    fresh = tmp_path / "fresh"
    with pytest.raises(HoodieNotSupportedError, match="CUSTOM"):
        write_arrow(str(fresh), rows((1, 9, 0, "custom")), "upsert",
                    conf(table_type, **{"hoodie.record.merge.mode": "CUSTOM"}), table_name="fresh")
    assert not fresh.exists()


def test_a_write_contradicting_the_tables_merge_mode_is_refused(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 5, 0, "stored")), "upsert", conf(), table_name="t")
    with_merge_mode(base, "EVENT_TIME_ORDERING")
    before = files_under(base)
    with pytest.raises(HoodieConfigError, match="merge mode is EVENT_TIME_ORDERING"):
        write_arrow(str(base), rows((1, 1, 0, "x")), "upsert", conf(**{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}))
    assert files_under(base) == before


@pytest.mark.parametrize("version", ["7", "10"])
def test_a_table_version_we_do_not_write_is_refused_before_anything_is_written(tmp_path, version):
    fresh = tmp_path / "fresh"
    with pytest.raises(HoodieNotSupportedError, match="6, 8, 9"):
        write_arrow(str(fresh), rows((1, 1, 0, "x")), "upsert",
                    conf(**{"hoodie.write.table.version": version}), table_name="fresh")
    assert not fresh.exists()


@pytest.mark.parametrize("version", ["7", "8", "9", "10"])
def test_an_existing_table_is_never_upgraded_or_downgraded(tmp_path, version):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 5, 0, "stored")), "upsert", conf(), table_name="t")
    before = files_under(base)
    with pytest.raises(HoodieNotSupportedError):
        write_arrow(str(base), rows((1, 9, 0, "x")), "upsert", conf(**{"hoodie.write.table.version": version}))
    assert files_under(base) == before
    # naming the table's own version is fine
    write_arrow(str(base), rows((1, 9, 0, "x")), "upsert", conf(**{"hoodie.write.table.version": "6"}))
    assert visible(base) == {1: (9, 0, "x")}


def test_a_null_in_any_ordering_field_is_refused(tmp_path):
    base = tmp_path / "t"
    bad = pa.table({"id": [1], "ts": pa.array([1], pa.int64()), "seq": pa.array([None], pa.int32()),
                    "p": ["a"], "v": ["x"]})
    with pytest.raises(HoodieKeyError, match="'seq'.*is null in 1 of 1 records"):
        write_arrow(str(base), bad, "upsert", tuple_conf("COPY_ON_WRITE"), table_name="t")
    assert not base.exists()


def test_a_projected_merge_on_read_read_still_orders_by_every_field(tmp_path):
    """A read of some columns still reads every ordering field to merge the log into the base."""
    base = tmp_path / "t"
    cfg = tuple_conf("MERGE_ON_READ", **{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    write_arrow(str(base), rows((1, 2, 3, "stored"), (2, 2, 3, "stored")), "upsert", cfg, table_name="t")
    with_merge_mode(base, "EVENT_TIME_ORDERING")
    write_arrow(str(base), rows((1, 2, 2, "stale"), (2, 2, 4, "newer")), "upsert", cfg)
    got = {r["id"]: r["v"] for r in read_table(str(base), columns=["id", "v"]).to_pylist()}
    assert got == {1: "stored", 2: "newer"}


# ------------------------------------------------------------------ version 9 tables, end to end
@pytest.fixture
def writable_1x(monkeypatch):
    """Versions 8/9 writable (the table layer's switch, until it is on by default)."""
    monkeypatch.setattr("airflow_hoodie.table.table_format.WRITABLE_TABLE_VERSIONS", (6, 8, 9))


def v9_conf(table_type: str, **extra: str) -> dict:
    return conf(table_type, **{"hoodie.write.table.version": "9", "hoodie.metadata.enable": "false", **extra})


@pytest.mark.parametrize("table_type", TYPES)
def test_a_version_9_table_orders_by_its_ordering_fields_and_hudi_rs_agrees(tmp_path, table_type, writable_1x):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 2, 3, "stored"), (2, 2, 3, "stored")), "upsert", v9_conf(table_type),
                table_name="t")
    config = HoodieTable.load(str(base)).config
    assert (config.table_version, config[tp.ORDERING_FIELDS], config.record_merge_mode) == (9, "ts",
                                                                                            "EVENT_TIME_ORDERING")
    later = conf(table_type)
    later.pop("hoodie.datasource.write.precombine.field")
    write_arrow(str(base), rows((1, 1, 0, "stale"), (2, 3, 0, "newer")), "upsert", later)
    assert visible(base) == {1: (2, 3, "stored"), 2: (3, 0, "newer")}
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


@pytest.mark.parametrize("table_type", TYPES)
def test_a_version_9_table_without_ordering_fields_orders_by_commit_time(tmp_path, table_type, writable_1x):
    base = tmp_path / "t"
    cfg = v9_conf(table_type)
    cfg.pop("hoodie.datasource.write.precombine.field")
    write_arrow(str(base), rows((1, 5, 0, "first")), "upsert", cfg, table_name="t")
    config = HoodieTable.load(str(base)).config
    assert config.record_merge_mode == "COMMIT_TIME_ORDERING" and config.ordering_fields == []
    write_arrow(str(base), rows((1, 1, 0, "latest")), "upsert", cfg)
    assert visible(base) == {1: (1, 0, "latest")}
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


@pytest.mark.parametrize("table_type", TYPES)
def test_a_version_9_table_compares_an_ordering_tuple(tmp_path, table_type, writable_1x):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 2, 3, "stored"), (2, 2, 3, "stored"), (2, 1, 9, "older in batch")), "upsert",
                one_ordering_spelling(v9_conf(table_type, **{"hoodie.table.ordering.fields": "ts,seq"}), {}), table_name="t")
    assert HoodieTable.load(str(base)).config[tp.ORDERING_FIELDS] == "ts,seq"
    later = conf(table_type)
    later.pop("hoodie.datasource.write.precombine.field")
    write_arrow(str(base), rows((1, 2, 2, "stale"), (2, 2, 4, "newer")), "upsert", later)
    assert visible(base) == {1: (2, 3, "stored"), 2: (2, 4, "newer")}


def test_a_version_9_complex_key_keeps_the_field_name_whatever_the_writer_flag(tmp_path, writable_1x):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 1, 0, "x")), "upsert", v9_conf(
        "COPY_ON_WRITE", **{"hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
                            "hoodie.write.complex.keygen.new.encoding": "true"}), table_name="t")
    assert HoodieTable.load(str(base)).config[tp.KEY_GENERATOR_TYPE] == "COMPLEX"
    assert read_table(str(base), columns=["_hoodie_record_key"]).column(0).to_pylist() == ["id:1"]
    # a later write finds the same key (an update, not a duplicate)
    write_arrow(str(base), rows((1, 2, 0, "y")), "upsert", conf(**{"hoodie.write.complex.keygen.new.encoding": "true"}))
    assert visible(base) == {1: (2, 0, "y")}


@pytest.mark.parametrize("table_type", TYPES)
def test_a_soft_delete_competes_by_the_whole_ordering_tuple(tmp_path, table_type):
    base = tmp_path / "t"
    cfg = tuple_conf(table_type, **{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})

    def soft(*recs: tuple) -> pa.Table:
        t = rows(*[r[:4] for r in recs])
        return t.append_column("_hoodie_is_deleted", pa.array([r[4] for r in recs]))

    write_arrow(str(base), soft((1, 2, 3, "stored", False), (2, 2, 3, "stored", False)), "upsert", cfg,
                table_name="t")
    with_merge_mode(base, "EVENT_TIME_ORDERING")
    # 1: same ts, smaller seq -> a stale delete, the record stays; 2: greater seq -> deleted
    write_arrow(str(base), soft((1, 2, 2, "x", True), (2, 2, 4, "x", True)), "upsert", cfg)
    assert visible(base) == {1: (2, 3, "stored")}


def test_a_table_whose_properties_say_custom_is_refused_untouched(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), rows((1, 1, 0, "x")), "upsert", conf(), table_name="t")
    with_merge_mode(base, "CUSTOM")
    before = files_under(base)
    with pytest.raises(HoodieNotSupportedError, match="record merge mode CUSTOM"):
        write_arrow(str(base), rows((1, 2, 0, "y")), "upsert", conf())
    with pytest.raises(HoodieNotSupportedError, match="record merge mode CUSTOM"):
        read_table(str(base))
    assert files_under(base) == before


@pytest.mark.parametrize("table_type", TYPES)
def test_a_version_9_table_without_ordering_fields_never_orders_by_a_default_ts(tmp_path, table_type, writable_1x):
    """Hudi 0.14's default precombine field ``ts`` is not Hudi 1.x's: an event-time table without
    ordering fields falls back to commit time, on write as on read."""
    base = tmp_path / "t"
    cfg = v9_conf(table_type, **{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    cfg.pop("hoodie.datasource.write.precombine.field")
    write_arrow(str(base), rows((1, 5, 0, "first"), (1, 9, 0, "dup"), (1, 3, 0, "last in batch")), "upsert", cfg,
                table_name="t")
    config = HoodieTable.load(str(base)).config
    assert (config.record_merge_mode, config.ordering_fields) == ("EVENT_TIME_ORDERING", [])
    assert visible(base) == {1: (3, 0, "last in batch")}
    write_arrow(str(base), rows((1, 1, 0, "latest")), "upsert", cfg)
    assert visible(base) == {1: (1, 0, "latest")}
