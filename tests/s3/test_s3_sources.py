"""A write's source batch on ``s3://`` (moto's server), read with the task's storage settings:
the upsert job in this process (its Spark session), on the driver path and the DataFrame path,
every source format, and a source on another store than the table with its own options. The
endpoint exists only in the storage options: a reader that ignored them would ask AWS itself."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.config_keys.write import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.table.read import read_table
from tests.s3.conftest import S3Place

pytestmark = pytest.mark.timeout(300)

CONF = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.write.table.version": "9", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
#: how each write path is chosen: a batch Spark sizes under the limit is collected to the driver
PATHS = {"driver": {}, "dataframe": {DRIVER_BATCH_MAX_BYTES: "0"}}


def batch(ts: int, ids: list[int]) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "p": ["p0"] * len(ids), "ts": pa.array([ts] * len(ids), pa.int64()),
                     "v": [f"v{ts}-{i}" for i in ids]})


def encode(table: pa.Table, fmt: str) -> bytes:
    out = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(table, out)
    elif fmt == "orc":
        paorc.write_table(table, out)
    elif fmt == "csv":
        pacsv.write_csv(table, out)
    else:  # JSON Lines, as Spark reads json
        out.write("".join(json.dumps(row) + "\n" for row in table.to_pylist()).encode())
    return out.getvalue()


def put(s3: S3Place, key: str, data: bytes) -> str:
    s3.client().put_object(Bucket=s3.bucket, Key=key, Body=data)
    return s3.uri(key)


def job_args(base: str, source: str, fmt: str, path: str, options: list[str]) -> list[str]:
    conf = {**CONF, **PATHS[path]}
    return ["--base-path", base, "--table-name", "orders", "--source", source, "--source-format", fmt,
            *[a for k, v in conf.items() for a in ("--hoodie-conf", f"{k}={v}")], *options]


def s3_options(s3: S3Place, flag: str = "--storage-option") -> list[str]:
    return [a for k, v in s3.storage_options.items() for a in (flag, f"{k}={v}")]


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The write path each upsert of the test took, in order."""
    from airflow_hoodie.spark import dataframe_write as upsert

    taken: list[str] = []
    chosen = upsert.driver_batch

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        small = chosen(*args, **kwargs)
        taken.append("dataframe" if small is None else "driver")
        return small

    monkeypatch.setattr(upsert, "driver_batch", spy)
    return taken


def run_upsert(args: list[str], capsys: pytest.CaptureFixture) -> dict:
    from spark_jobs.upsert import main

    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_upsert_job_reads_an_s3_source_with_the_tables_options(s3: S3Place, spark, path: str, capsys,
                                                               engines: list[str]) -> None:
    """Table and landing zone on the same store: the table's options reach the source, for a
    file (first batch) and a directory of files (second, with Spark's hidden ``_SUCCESS``)."""
    base = s3.uri("orders")
    first = put(s3, "landing/b1.parquet", encode(batch(1, [1, 2, 3]), "parquet"))
    run_upsert(job_args(base, first, "parquet", path, s3_options(s3)), capsys)
    put(s3, "landing/b2/part-0.parquet", encode(batch(2, [2]), "parquet"))
    put(s3, "landing/b2/part-1.parquet", encode(batch(2, [4]), "parquet"))
    put(s3, "landing/b2/_SUCCESS", b"")
    result = run_upsert(job_args(base, s3.uri("landing/b2"), "parquet", path, s3_options(s3)), capsys)
    assert result["state"] == "COMPLETED", result
    rows = read_table(base, storage_options=s3.storage_options).to_pylist()
    assert {r["id"]: r["v"] for r in rows} == {"k1": "v1-1", "k2": "v2-2", "k3": "v1-3", "k4": "v2-4"}
    assert engines == [path, path]  # a small batch on S3 is sized by its files, as Spark sizes local ones


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv", "orc"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_source_format_on_s3_with_its_own_options(s3: S3Place, spark, tmp_path, fmt: str, path: str,
                                                        capsys, engines: list[str]) -> None:
    """A local table fed from S3: only ``--source-storage-option`` knows the endpoint."""
    base = str(tmp_path / "orders")
    source = put(s3, f"landing/b1.{fmt}", encode(batch(1, [1, 2]), fmt))
    result = run_upsert(job_args(base, source, fmt, path, s3_options(s3, "--source-storage-option")), capsys)
    assert result["state"] == "COMPLETED", result
    rows = read_table(base).to_pylist()
    assert sorted((r["id"], r["ts"], r["v"]) for r in rows) == [("k1", 1, "v1-1"), ("k2", 1, "v1-2")]
    assert engines == [path]


def test_a_source_without_its_endpoint_fails_before_spark_starts(s3: S3Place, tmp_path, capsys) -> None:
    """The table's options (none: a local table) do not reach this S3 source: the job says
    which source it could not find and how to point at it."""
    from spark_jobs.upsert import main

    source = put(s3, "landing/b1.parquet", encode(batch(1, [1]), "parquet"))
    wrong = ["--source-storage-option", "endpoint_override=http://127.0.0.1:9", "--source-storage-option",
             "connect_timeout=1", "--source-storage-option", "retry_max_attempts=1"]
    assert main(job_args(str(tmp_path / "t"), source, "parquet", "driver", wrong)) == 1
    assert source in capsys.readouterr().err


#: a Hive-style landing directory: the partition field is in the folder names only
HIVE_LAYOUT = {"region=eu/day=1": [1, 2], "region=us/day=2": [3], "region=us%2Fwest/day=__HIVE_DEFAULT_PARTITION__": [4]}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_hive_partitioned_source_directory_on_s3_reads_as_spark_reads_it_locally(
        s3: S3Place, spark, tmp_path, capsys, path: str) -> None:
    """Spark's partition discovery gives a local directory's ``key=value`` folders as columns
    (typed: ``day`` int, the Hive null partition null, ``%2F`` unescaped); an S3 source read
    through our storage lost them, so a table partitioned by ``region`` refused the batch
    ("Partition path field 'region' is not a column of the input")."""
    import pyarrow.parquet as pq

    local = tmp_path / "landing"
    for folder, ids in HIVE_LAYOUT.items():
        rows = batch(1, ids).drop_columns(["p"])
        put(s3, f"landing/d/{folder}/part-0.parquet", encode(rows, "parquet"))
        (local / folder).mkdir(parents=True)
        pq.write_table(rows, local / folder / "part-0.parquet")
    by_region = ["--hoodie-conf", "hoodie.datasource.write.partitionpath.field=region"]
    got = {}
    for where, source in (("local", str(local)), ("s3", s3.uri("landing/d"))):
        base = str(tmp_path / where)
        run_upsert(job_args(base, source, "parquet", path, s3_options(s3, "--source-storage-option")) + by_region,
                   capsys)
        table = read_table(base)
        table = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie")])
        got[where] = (table.schema, sorted(table.to_pylist(), key=lambda r: r["id"]))
    assert got["s3"] == got["local"]
    assert [(r["id"], r["region"], r["day"]) for r in got["s3"][1]] == [
        ("k1", "eu", 1), ("k2", "eu", 1), ("k3", "us", 2), ("k4", "us/west", None)]


def test_partition_discovery_types_and_conflicting_layouts() -> None:
    from airflow_hoodie.errors import HoodieIOError
    from airflow_hoodie.spark.source import source_partitions

    found = source_partitions(["/s/a=1/b=x/c=2024-01-02/f", "/s/a=3000000000/b=1.5/c=2024-01-03/f"], "/s")
    assert [(f.name, str(f.type)) for f in found.fields] == [("a", "int64"), ("b", "string"), ("c", "date32[day]")]
    assert [str(f.type) for f in source_partitions(["/s/a=1.5/f", "/s/a=2/f"], "/s").fields] == ["double"]
    assert [str(f.type) for f in source_partitions(["/s/a=1_000/f", "/s/a=nan/f"], "/s").fields] == ["string"]
    with pytest.raises(HoodieIOError, match=r"mixes partition layouts.*Point --source at one directory"):
        source_partitions(["/s/a=1/f", "/s/b=1/f"], "/s")
