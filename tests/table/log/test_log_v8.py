"""Table version 8/9 log files against the ones Hudi 1.x wrote (conformance-next).

Hudi 1.x names each delta commit's log file with that delta commit (not the slice's base
instant), starts a new file instead of appending, and writes the blocks with the
INSTANT_TIME and SCHEMA headers. Our writer, given the records and keys Hudi wrote,
must produce the same names and the same bytes.
"""

from __future__ import annotations

import pathlib
import shutil


from airflow_hoodie.table.file_group.file_naming import log_file_name, parse_log_file_name
from airflow_hoodie.table.file_group.log_file_layout import LogFileLayout, log_file_layout
from airflow_hoodie.table.log.data_block import avro_data_block, decode_avro_data_block
from airflow_hoodie.table.log.delete_block import DeleteRecord, decode_delete_block, delete_block
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.storage.storage import Storage

MOR_TABLES = ("v9_txns_nonpart_nometa", "v9_txns_simple_meta", "v9_txns_complex_nometa")


def _logs(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for name in MOR_TABLES:
        table = root / "tables" / "mor" / name
        out += [p for p in table.rglob(".*.log.*") if ".hoodie" not in p.parts]
    return sorted(out)


def _completed_delta_commits(table: pathlib.Path) -> set[str]:
    return {p.name.split("_")[0] for p in (table / ".hoodie" / "timeline").glob("*_*.deltacommit")}


def _table_of(path: pathlib.Path) -> pathlib.Path:
    for parent in path.parents:
        if (parent / ".hoodie").is_dir():
            return parent
    raise AssertionError(f"no table above {path}")


def test_fixture_logs_are_found(conformance_next: pathlib.Path) -> None:
    # 5 + 6 + 4 log files in the three MOR tables: the tests below must not pass on nothing
    assert len(_logs(conformance_next)) == 15


def test_v9_log_file_names_carry_their_delta_commit(conformance_next: pathlib.Path) -> None:
    """Every log file Hudi 1.x wrote: version 1, a write token, and the instant in its name is
    the INSTANT_TIME of its blocks, a completed delta commit of the table."""
    v9 = log_file_layout(9)
    for path in _logs(conformance_next):
        parsed = parse_log_file_name(path.name)
        assert parsed is not None, path.name
        blocks = read_log_blocks_from_bytes(path.read_bytes(), str(path))
        assert blocks and {b.instant_time for b in blocks} == {parsed.base_instant}, path.name
        assert parsed.base_instant in _completed_delta_commits(_table_of(path))
        assert parsed.version == 1 and parsed.write_token
        # what our layout names the file, whatever the slice's base instant
        name_instant = v9.log_file_instant("20200101000000000", blocks[0].instant_time)
        assert log_file_name(parsed.file_id, name_instant, 1, parsed.write_token) == path.name


def test_v6_layout_names_by_base_instant_v8_by_write_instant() -> None:
    v6, v8 = LogFileLayout(6), LogFileLayout(8)
    assert v6.log_file_instant("001", "005") == "001"
    assert v8.log_file_instant("001", "005") == "005"
    # a new group without base file: the writing instant in both
    assert v6.log_file_instant(None, "005") == "005"
    assert v6.appends_to_existing_log and not v8.appends_to_existing_log
    assert not v6.rollback_deletes_logs and v8.rollback_deletes_logs
    assert v8.is_written_by(".f-0_005.log.1_0-1-2", "005")
    assert not v8.is_written_by(".f-0_001.log.1_0-1-2", "005")
    assert not v6.is_written_by(".f-0_005.log.1_0-1-2", "005")


def test_v9_delta_write_stat_fields_match_hudi(conformance_next: pathlib.Path) -> None:
    """Hudi 1.x's delta stat: prevCommit is the delta commit itself, no base file, only the
    written log (as in the fixture's 20260307135931043 delta commit)."""
    fields = LogFileLayout(9).delta_stat_fields(
        "20260307135931043", "20260307135926671", "1900ff60-ed76-4f51-823b-dbcb27f05a0c-0_0-3-6_20260307135926671.parquet",
        [".1900ff60-ed76-4f51-823b-dbcb27f05a0c-0_20260307135931043.log.1_0-13-16"])
    assert fields == {"prevCommit": "20260307135931043", "baseFile": "",
                      "logFiles": [".1900ff60-ed76-4f51-823b-dbcb27f05a0c-0_20260307135931043.log.1_0-13-16"]}
    v6 = LogFileLayout(6).delta_stat_fields("005", "001", "f-0_0-1-2_001.parquet", [".f-0_001.log.1_0-1-2"])
    assert v6 == {"prevCommit": "001", "baseFile": "f-0_0-1-2_001.parquet", "logFiles": [".f-0_001.log.1_0-1-2"]}


def test_v9_headers_are_instant_time_and_schema(conformance_next: pathlib.Path) -> None:
    """A Hudi 1.x delta commit's data and delete blocks carry exactly INSTANT_TIME and
    SCHEMA (no record positions, partial flag or compacted times by default); the header
    map's order is a Java HashMap's, so both orders occur in the corpus."""
    orders = set()
    for path in _logs(conformance_next):
        for block in read_log_blocks_from_bytes(path.read_bytes(), str(path)):
            assert set(block.headers) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA}, path.name
            assert block.footers == {}
            assert block.version == 1
            orders.add(tuple(block.headers))
    assert orders == {(HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA), (HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME)}
    assert HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS == 8
    assert HeaderKey.IS_PARTIAL == 7 and HeaderKey.RECORD_POSITIONS == 5 and HeaderKey.COMPACTED_BLOCK_TIMES == 4


def _rebuilt(block: LogBlock) -> LogBlock:
    """The block as our writer builds it from what Hudi put in it (records or keys, schema,
    instant), headers in the fixture's order."""
    if block.block_type == BlockType.AVRO_DATA:
        ours = avro_data_block(decode_avro_data_block(block), block.schema, block.instant_time)
    else:
        assert block.block_type == BlockType.DELETE
        # the corpus deletes are hard deletes (SQL DELETE): Hudi writes IntWrapper{0}, which
        # is what our writer writes for a key without ordering value
        keys = decode_delete_block(block)
        assert all(k.ordering_value == 0 for k in keys)
        ours = delete_block([DeleteRecord(k.record_key, k.partition_path, None) for k in keys],
                            block.instant_time, None, schema=block.schema)
    ours.headers = {k: ours.headers[k] for k in block.headers}
    return ours


def test_v9_log_files_rewritten_byte_for_byte(conformance_next: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Our v9 writer, handed each fixture log's records/keys, the slice's base instant and
    the delta commit, writes a file of the same name and the same bytes."""
    storage, root = Storage.for_uri(str(tmp_path))
    for path in _logs(conformance_next):
        parsed = parse_log_file_name(path.name)
        assert parsed is not None
        original = path.read_bytes()
        blocks = read_log_blocks_from_bytes(original, str(path))
        out_dir = storage.join(root, path.parent.name + "-" + parsed.file_id)
        writer = LogWriter.for_instant(storage, out_dir, parsed.file_id, "20200101000000000",
                                       blocks[0].instant_time, parsed.write_token, 9)
        with writer:
            results = writer.append([_rebuilt(b) for b in blocks])
        assert results[0].file_name == path.name
        assert storage.read_bytes(results[0].log_path) == original, path.name


def test_v9_writer_never_appends_to_an_existing_log(tmp_path: pathlib.Path, conformance_next: pathlib.Path) -> None:
    """A second v9 writer of the same instant and group rolls over to version 2 (Hudi 1.x
    never appends); a v6 writer appends to the slice's file on local storage."""
    src = _logs(conformance_next)[0]
    parsed = parse_log_file_name(src.name)
    assert parsed is not None
    block = read_log_blocks_from_bytes(src.read_bytes(), str(src))[0]
    storage, root = Storage.for_uri(str(tmp_path))
    names = []
    for _ in range(2):
        with LogWriter.for_instant(storage, root, parsed.file_id, "001", parsed.base_instant, "0-1-2", 9) as w:
            names.append(w.append([_rebuilt(block)])[0].file_name)
    assert names == [f".{parsed.file_id}_{parsed.base_instant}.log.1_0-1-2",
                     f".{parsed.file_id}_{parsed.base_instant}.log.2_0-1-2"]
    v6_dir = storage.join(root, "v6")
    v6_names = []
    for instant in ("005", "006"):
        with LogWriter.for_instant(storage, v6_dir, parsed.file_id, "001", instant, "0-1-2", 6) as w:
            v6_names.append(w.append([_rebuilt(block)])[0].file_name)
    assert v6_names == [f".{parsed.file_id}_001.log.1_0-1-2"] * 2
    assert storage.size(storage.join(v6_dir, v6_names[0])) == 2 * len(src.read_bytes())


def test_v6_fixture_log_is_named_by_base_instant(conformance_next: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The contrast: logs/valid_log_delete (Hudi table version 6) names its file with the
    slice's base instant while its block belongs to a later delta commit; the v6 layout
    reproduces that name and the bytes."""
    src = next((conformance_next / "logs" / "valid_log_delete").glob(".*.log.*"))
    parsed = parse_log_file_name(src.name)
    assert parsed is not None
    blocks = read_log_blocks_from_bytes(src.read_bytes(), str(src))
    assert blocks[0].instant_time == "20250618054714114" != parsed.base_instant
    storage, root = Storage.for_uri(str(tmp_path))
    shutil.rmtree(tmp_path, ignore_errors=True)
    with LogWriter.for_instant(storage, root, parsed.file_id, parsed.base_instant, blocks[0].instant_time,
                               parsed.write_token, 6) as w:
        res = w.append([_rebuilt(b) for b in blocks])
    assert res[0].file_name == src.name
    assert storage.read_bytes(res[0].log_path) == src.read_bytes()


def test_v9_metadata_table_logs_are_named_by_their_delta_commit(conformance_next: pathlib.Path) -> None:
    """The metadata table of a Hudi 1.x table follows the same layout: each of its log files
    is named by the metadata delta commit whose blocks it holds (the initial
    ``00000000000000000`` files included), so ``LogFileLayout(9)`` names them too."""
    mdt = conformance_next / "tables" / "mor" / "v9_txns_simple_meta" / ".hoodie" / "metadata"
    logs = sorted(p for p in mdt.rglob(".*.log.*") if ".hoodie" not in p.relative_to(mdt).parts)
    assert len(logs) > 20
    v9 = LogFileLayout(9)
    for path in logs:
        parsed = parse_log_file_name(path.name)
        assert parsed is not None, path.name
        blocks = read_log_blocks_from_bytes(path.read_bytes(), str(path))
        assert {b.instant_time for b in blocks} == {parsed.base_instant}, path.name
        assert v9.log_file_instant("00000000000000000", parsed.base_instant) == parsed.base_instant
