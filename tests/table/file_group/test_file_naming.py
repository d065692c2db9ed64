"""Base/log file names, write tokens and file ids as Hudi names them."""

from __future__ import annotations

import re

from airflow_hoodie.table.file_group.file_naming import (
    BaseFileName,
    LogFileName,
    base_file_name,
    is_base_file,
    is_log_file,
    log_file_name,
    make_write_token,
    new_file_id,
    parse_base_file_name,
    parse_log_file_name,
)


def test_write_token_and_file_id():
    assert make_write_token(0, 13, 23) == "0-13-23"
    fid = new_file_id()
    assert re.match(r"^[0-9a-f-]{36}-0$", fid)
    assert new_file_id() != fid


def test_base_file_round_trip():
    name = "a22e8257-e249-45e9-ba46-115bc85adcba-0_0-161-223_20240418173235694.parquet"
    parsed = parse_base_file_name(name)
    assert parsed == BaseFileName("a22e8257-e249-45e9-ba46-115bc85adcba-0", "0-161-223", "20240418173235694", ".parquet")
    assert parsed.name == name
    assert base_file_name(parsed.file_id, parsed.write_token, parsed.instant) == name
    assert is_base_file(name)


def test_log_file_round_trip():
    name = ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"
    parsed = parse_log_file_name(name)
    assert parsed == LogFileName("0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "20250126040823628", 2, "1-0-1", ".log")
    assert parsed.name == name
    assert log_file_name(parsed.file_id, parsed.base_instant, 2, "1-0-1") == name
    assert is_log_file(name)
    old = parse_log_file_name(".f1-0_20240101000000000.log.3")
    assert old.write_token is None and old.version == 3 and old.name == ".f1-0_20240101000000000.log.3"
    cdc = parse_log_file_name(".f1-0_20240101000000000.log.1_0-1-2.cdc")
    assert cdc.suffix == ".cdc" and not is_log_file(cdc.name)


def test_archive_file_names():
    arch = parse_log_file_name(".commits_.archive.1_1-0-1")
    assert arch.file_id == "commits" and arch.base_instant == "" and arch.ext == ".archive" and arch.version == 1
    assert not is_log_file(".commits_.archive.1_1-0-1")


def test_non_matching_names():
    for name in [".hoodie_partition_metadata", "hoodie.properties", "x.parquet", "f_1-2-3_abc.parquet",
                 "f_1-2-3_20240101000000000.txt", ".f1_2024.log", "f1-0_20240101000000000.log.1_0-1-2"]:
        assert parse_base_file_name(name) is None, name
        assert not is_log_file(name), name
