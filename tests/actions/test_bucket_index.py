"""Hudi's simple bucket index (issue 39): every row sits in the file group of the bucket Hudi's
``BucketIdentifier`` hashes its key to, on table versions 6 and 9, COPY_ON_WRITE and
MERGE_ON_READ; a table laid out by bucket is never given a non-bucket group; clustering is
refused; compaction keeps the groups; two writers creating one bucket conflict.

The expected buckets come from :func:`expected_bucket`, a transcription of Hudi's Java written
here, apart from the module under test, loop by loop."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.clustering import schedule_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.transaction.conflict_resolution import (
    TimelineSnapshot,
    conflicting_instants,
)
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.instant import Instant, State
from tests.table.normalize import hudi_rs_rows, normalize_table

# ----------------------------------------------------------------- Hudi's hashing, transcribed


def _java_hash(s: str | None) -> int:
    if s is None:
        return 0
    units = s.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i:i + 2], "little")) % (1 << 32)
    return h


def _list_hash(values: list[str | None]) -> int:
    h = 1
    for v in values:
        h = (h * 31 + _java_hash(v)) % (1 << 32)
    return h


def _value(v: str) -> str | None:
    return None if v == "__null__" else "" if v == "__empty__" else v


def _values_0x(key: str, fields: list[str]) -> list[str | None]:
    """0.14's BucketIdentifier.getHashKeys + KeyGenUtils.extractRecordKeysByFields."""
    if ":" not in key:
        return [key]
    parts = key.split(",")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    out: list[str | None] = []
    for part in parts:
        kv = part.split(":", 1)
        if len(kv) == 1:
            out.append(kv[0])
        elif kv[0] in fields:
            out.append(_value(kv[1]))
    return out


def _values_1x(key: str, fields: list[str]) -> list[str | None]:
    """1.x's KeyGenUtils.extractRecordKeysByFields (HUDI-8403), for keys whose values hold no
    ``,`` followed by ``:`` (all the keys below): a ``field:value`` pair starts after a ``,``
    that precedes a ``:`` with no ``,`` between."""
    if "," not in key or ":" not in key:
        return [key]
    pairs, cur = [], ""
    for piece in key.split(","):
        if ":" in piece and cur:
            pairs.append(cur)
            cur = piece
        else:
            cur = piece if not cur else cur + "," + piece
    pairs.append(cur)
    out = [_value(p.split(":", 1)[1]) for p in pairs if p.split(":", 1)[0] in fields]
    return out or [key]


def expected_bucket(key: str, fields: list[str], num_buckets: int, version: int) -> int:
    values = (_values_1x if version >= 8 else _values_0x)(key, fields)
    return (_list_hash(values) & 0x7FFFFFFF) % num_buckets


def test_transcription_matches_java_constants() -> None:
    # "hello".hashCode() == 99162322, List.of("hello").hashCode() == 31 + that
    assert _java_hash("hello") == 99162322 and _list_hash(["hello"]) == 99162353
    from airflow_hoodie.table.bucket_index import (
        bucket_ids,
        hash_keys_scan,
        java_string_hash,
    )

    assert java_string_hash("hello") == 99162322 and java_string_hash("\U0001F600x") == _java_hash("\U0001F600x") - (
        1 << 32 if _java_hash("\U0001F600x") >= 1 << 31 else 0)
    assert hash_keys_scan("f1:2014-10-22 13:50:42,f2:b", []) == ["2014-10-22 13:50:42", "b"]
    keys = ["a", "key:with:colons", "id:7", "id:__null__,n:x", "id:__empty__,n:x", "ü", "", "x" * 300]
    for parser, version in (("split", 6), ("scan", 9)):
        got = bucket_ids(pa.array(keys), ["id"], 13, parser).tolist()
        assert got == [expected_bucket(k, ["id"], 13, version) for k in keys]


# ------------------------------------------------------------------------------- the writes

BASE = {"hoodie.table.name": "t", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "4", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _conf(version: int, table_type: str, key: str = "id", **extra: str) -> dict[str, str]:
    conf = {**BASE, "hoodie.write.table.version": str(version), "hoodie.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": key, **extra}
    if "," in key:
        conf["hoodie.datasource.write.keygenerator.class"] = "org.apache.hudi.keygen.ComplexKeyGenerator"
    return conf


def _batch(ids: list[str], ts: int, parts: list[str] | None = None, names: list[str] | None = None) -> pa.Table:
    return pa.table({"id": ids, "name": names or [f"n{i}" for i in range(len(ids))],
                     "ts": pa.array([ts] * len(ids), pa.int64()),
                     "p": parts or ["a" if i % 2 else "b" for i in range(len(ids))], "v": [f"{i}@{ts}" for i in ids]})


def _check_layout(base: str, fields: list[str], num: int, version: int,
                  storage_options: dict[str, str] | None = None) -> dict[tuple[str, int], str]:
    """Every row's group is its key's bucket, one group per (partition, bucket); returns them."""
    t = read_table(base, storage_options=storage_options)
    groups: dict[tuple[str, int], str] = {}
    for key, part, name in zip(t.column("_hoodie_record_key").to_pylist(), t.column("_hoodie_partition_path").to_pylist(),
                               t.column("_hoodie_file_name").to_pylist()):
        fid = name.split("_", 1)[0] if name.endswith(".parquet") else name.lstrip(".").split("_", 1)[0]
        bucket = expected_bucket(key, fields, num, version)
        assert fid[:8] == f"{bucket:08d}" and fid.endswith("-0"), (key, fid, bucket)
        assert groups.setdefault((part, bucket), fid) == fid
    return groups


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rows_live_in_their_buckets_group(tmp_path, version: int, table_type: str) -> None:
    base = str(tmp_path / "t")
    conf = _conf(version, table_type)
    ids = [f"k{i}" for i in range(20)] + ["key:with:colon"]
    write_arrow(base, _batch(ids, 1), "insert", conf)
    first = _check_layout(base, ["id"], 4, version)
    # updates and new keys: same groups, new buckets get their own
    write_arrow(base, _batch(ids[:5] + [f"new{i}" for i in range(10)], 2), "upsert", conf)
    second = _check_layout(base, ["id"], 4, version)
    assert all(second[k] == fid for k, fid in first.items())
    rows = read_table(base)
    assert rows.num_rows == 31 and len(set(rows.column("id").to_pylist())) == 31
    assert {r["id"]: r["v"] for r in rows.to_pylist()}["k3"] == "k3@2"
    write_arrow(base, _batch(["k1", "new2"], 3, parts=["a", "a"]), "delete", conf)
    assert read_table(base).num_rows == 29
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


@pytest.mark.parametrize("version", [6, 9])
def test_complex_keys_hash_the_hash_fields(tmp_path, version: int) -> None:
    base = str(tmp_path / "t")
    conf = _conf(version, "COPY_ON_WRITE", key="id,name", **{"hoodie.bucket.index.hash.field": "id"})
    write_arrow(base, _batch([f"k{i}" for i in range(12)] + ["a:b"], 1, names=[f"x,{i}" for i in range(13)]),
                "insert", conf)
    _check_layout(base, ["id"], 4, version)
    write_arrow(base, _batch(["k1", "k2"], 2, parts=["a", "b"], names=["x,1", "x,2"]), "upsert", conf)
    _check_layout(base, ["id"], 4, version)
    assert read_table(base).num_rows == 13


def test_a_single_field_complex_key_hashes_differently_per_release(tmp_path) -> None:
    """``id:5``: 0.x hashes the value ``5``, 1.x the whole key (HUDI-8403): each table is
    written the way its own release's writers write it."""
    for version in (6, 9):
        base = str(tmp_path / f"t{version}")
        conf = _conf(version, "COPY_ON_WRITE", **{
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.bucket.index.num.buckets": "64"})
        write_arrow(base, _batch([str(i) for i in range(8)], 1, parts=["a"] * 8), "insert", conf)
        keys = read_table(base).column("_hoodie_record_key").to_pylist()
        assert all(k.startswith("id:") for k in keys)
        _check_layout(base, ["id"], 64, version)


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_with_another_index_into_a_bucket_table_is_refused(tmp_path, version: int) -> None:
    base = str(tmp_path / "t")
    conf = _conf(version, "MERGE_ON_READ")
    write_arrow(base, _batch([f"k{i}" for i in range(10)], 1), "insert", conf)
    before = sorted(os.listdir(os.path.join(base, ".hoodie")))
    for index in (None, "SIMPLE", "BLOOM"):
        other = {k: v for k, v in conf.items() if k != "hoodie.index.type"}
        if index:
            other["hoodie.index.type"] = index
        for batch in (_batch(["k1", "z"], 2), _batch(["z"], 2, parts=["new_partition"])):
            with pytest.raises(HoodieNotSupportedError, match="hoodie.index.type=BUCKET"):
                write_arrow(base, batch, "upsert", other)
    assert sorted(os.listdir(os.path.join(base, ".hoodie"))) == before
    assert not os.path.exists(os.path.join(base, "new_partition"))


def test_a_bucket_write_into_a_table_of_other_groups_is_refused(tmp_path) -> None:
    base = str(tmp_path / "t")
    conf = _conf(6, "COPY_ON_WRITE")
    plain = {k: v for k, v in conf.items() if k != "hoodie.index.type"}
    write_arrow(base, _batch([f"k{i}" for i in range(10)], 1), "insert", plain)
    if all(f.file_id[:8].isdigit() for f in HoodieTable.load(base).planning_view().existing_files(None)):
        pytest.skip("random file ids that all look like buckets")
    before = sorted(os.listdir(os.path.join(base, ".hoodie")))
    with pytest.raises(HoodieNotSupportedError, match="not named by a bucket"):
        write_arrow(base, _batch(["k1"], 2), "upsert", conf)
    assert sorted(os.listdir(os.path.join(base, ".hoodie"))) == before


def test_too_few_buckets_and_consistent_hashing_are_refused(tmp_path) -> None:
    base = str(tmp_path / "t")
    conf = _conf(6, "COPY_ON_WRITE", **{"hoodie.bucket.index.num.buckets": "16"})
    write_arrow(base, _batch([f"k{i}" for i in range(40)], 1), "insert", conf)
    with pytest.raises(HoodieNotSupportedError, match="num.buckets=2"):
        write_arrow(base, _batch(["k1"], 2), "upsert", {**conf, "hoodie.bucket.index.num.buckets": "2"})
    with pytest.raises(HoodieNotSupportedError, match="CONSISTENT_HASHING"):
        write_arrow(base, _batch(["k1"], 2), "upsert", {**conf, "hoodie.index.bucket.engine": "CONSISTENT_HASHING"})
    with pytest.raises(HoodieConfigError, match="not record key fields"):
        write_arrow(base, _batch(["k1"], 2), "upsert", {**conf, "hoodie.bucket.index.hash.field": "name"})


def test_insert_overwrite_starts_new_bucket_groups(tmp_path) -> None:
    base = str(tmp_path / "t")
    conf = _conf(6, "COPY_ON_WRITE")
    write_arrow(base, _batch([f"k{i}" for i in range(12)], 1), "insert", conf)
    before = _check_layout(base, ["id"], 4, 6)
    write_arrow(base, _batch(["x1", "x2", "x3"], 2, parts=["a"] * 3), "insert_overwrite", conf)
    after = _check_layout(base, ["id"], 4, 6)
    assert sorted(read_table(base).column("id").to_pylist()) == sorted(["x1", "x2", "x3"] + [f"k{i}" for i in
                                                                                              range(0, 12, 2)])
    assert all(after[k] != before[k] for k in after if k[0] == "a" and k in before)
    live = HoodieTable.load(base).planning_view().existing_files(None)
    assert len({(f.partition_path, f.file_id[:8]) for f in live}) == len(live)


def test_a_table_with_bucket_index_metadata_is_refused(tmp_path) -> None:
    """Consistent hashing and Hudi 1.1's partition-level buckets keep their layout in
    ``.hoodie/.bucket_index``: one fixed bucket count would hash keys elsewhere."""
    base = str(tmp_path / "t")
    conf = _conf(9, "COPY_ON_WRITE")
    write_arrow(base, _batch(["a", "b"], 1), "insert", conf)
    os.makedirs(os.path.join(base, ".hoodie", ".bucket_index", "partition_bucket_index_meta"))
    with pytest.raises(HoodieNotSupportedError, match="partition-level bucket index"):
        write_arrow(base, _batch(["c"], 2), "upsert", conf)
    assert read_table(base).num_rows == 2


def test_clustering_is_refused_and_compaction_keeps_the_groups(tmp_path) -> None:
    base = str(tmp_path / "t")
    conf = _conf(9, "MERGE_ON_READ")
    write_arrow(base, _batch([f"k{i}" for i in range(16)], 1), "insert", conf)
    write_arrow(base, _batch([f"k{i}" for i in range(0, 16, 3)] + ["n1"], 2), "upsert", conf)
    groups = _check_layout(base, ["id"], 4, 9)
    with pytest.raises(HoodieNotSupportedError, match="simple bucket index"):
        schedule_clustering(HoodieTable.load(base), HoodieConfig({}))
    c.schedule_compaction(HoodieTable.load(base), HoodieConfig({}), force=True)
    res = c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor())
    assert res["state"] == "completed"
    assert _check_layout(base, ["id"], 4, 9) == groups
    files = HoodieTable.load(base).planning_view().existing_files(None)
    assert {(f.partition_path, f.file_id) for f in files} == {(p, fid) for (p, _b), fid in groups.items()}
    assert all(not f.log_files for f in files)
    assert read_table(base).num_rows == 17


def test_two_writers_creating_one_bucket_conflict(tmp_path) -> None:
    """Writer B started before writer A committed a new group for bucket 1 of partition a; B's
    own new group of bucket 1 has another file id, but the same bucket: a conflict."""
    base = str(tmp_path / "t")
    conf = _conf(6, "COPY_ON_WRITE")
    write_arrow(base, _batch(["seed"], 1, parts=["b"]), "insert", conf)
    started = TimelineSnapshot.of(HoodieTable.load(base).reload_timeline())
    write_arrow(base, _batch(["k1"], 2, parts=["a"]), "insert", conf)
    tl = HoodieTable.load(base).reload_timeline()
    a_group = next(f for f in HoodieTable.load(base).planning_view().existing_files(["a"]))
    own = Instant("99990101000000000", "commit", State.INFLIGHT)
    mine = {("a", a_group.file_id[:8] + "-ffff-ffff-ffff-ffffffffffff-0")}
    assert conflicting_instants(tl, own, mine, started, bucket_scope=True)
    assert not conflicting_instants(tl, own, mine, started)
    other_bucket = {("a", f"{(int(a_group.file_id[:8]) + 1) % 4:08d}-ffff-ffff-ffff-ffffffffffff-0")}
    assert not conflicting_instants(tl, own, other_bucket, started, bucket_scope=True)


def test_flink_and_nbcc_group_names_route_by_their_bucket() -> None:
    """Flink's stream writer named groups without ``-0``; NBCC writers use one fixed id per
    bucket, the same in every partition: both route by their 8-digit prefix and partition."""
    from airflow_hoodie.actions.bucket_index_write import routing_for, tag_by_bucket
    from airflow_hoodie.settings.bucket_index import BucketIndexSettings
    from airflow_hoodie.table.bucket_index import bucket_ids
    from airflow_hoodie.table.file_group.file_system_view import ExistingFile

    nbcc = "00000001-0000-0000-0000-000000000000"
    files = [ExistingFile("a", nbcc, None, "1", 0, [f".{nbcc}_1.log.1_0-1-0"]),
             ExistingFile("b", nbcc + "-0", None, "1", 0, [f".{nbcc}-0_1.log.1_0-1-0"]),
             ExistingFile("b", "00000000-1234-5678-9abc-def012345678", "x.parquet", "1", 1, [])]
    routing = routing_for(files, BucketIndexSettings(2, ("id",)), "scan")
    keys = [f"k{i}" for i in range(20)]
    batch = pa.table({"_hoodie_record_key": keys * 2, "_hoodie_partition_path": ["a"] * 20 + ["b"] * 20,
                      "_hoodie_op": ["U"] * 40})
    tagged = tag_by_bucket(batch, routing)
    ids = bucket_ids(pa.array(keys), ["id"], 2, "scan").tolist() * 2
    for part, bucket, fid in zip(tagged.column("_hoodie_partition_path").to_pylist(), ids,
                                 tagged.column("_hoodie_loc_file").to_pylist()):
        expected = {("a", 1): nbcc, ("b", 1): nbcc + "-0", ("b", 0): "00000000-1234-5678-9abc-def012345678"}
        if (part, bucket) in expected:
            assert fid == expected[(part, bucket)]
        else:  # bucket 0 of partition a: a new group, named by its bucket
            assert fid.startswith("00000000-") and fid.endswith("-0") and fid != expected[("b", 0)]
    with pytest.raises(HoodieNotSupportedError, match="num.buckets=1"):
        routing_for(files, BucketIndexSettings(1, ("id",)), "scan")
    twice = files + [ExistingFile("a", "00000001-aaaa-bbbb-cccc-dddddddddddd-0", "y.parquet", "1", 1, [])]
    with pytest.raises(HoodieError, match="two file groups for bucket 00000001"):
        routing_for(twice, BucketIndexSettings(2, ("id",)), "scan")
