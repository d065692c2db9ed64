"""Appending one delta commit's blocks to one file group of a metadata-table index partition.

Every index writer (record index, statistics, secondary indexes) appends the same way, as
Hudi's append handle on the metadata table does: a new log version of the group's latest
slice per delta commit, with this writer's own token (a store without append needs no
special case), and a write stat for the delta commit's metadata. One implementation, so the
stats of every partition look alike to Hudi's readers and to our compaction planner.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.log.log_block import LogBlock
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable


def append_group_log(mdt: HoodieTable, partition: str, file_slice: FileSlice, instant_time: str,
                     blocks: Sequence[LogBlock], meta: CommitMetadata, **counts: int) -> None:
    """Append ``blocks`` as a new log version of ``file_slice`` (a file group of metadata-table
    partition ``partition``) for delta commit ``instant_time``, and add its write stat to
    ``meta``. ``counts``: the stat's record counts (``numWrites``, ``numInserts``, ...)."""
    folder = mdt.storage.join(mdt.base_path, partition)
    token = make_write_token(secrets.randbelow(1 << 16), secrets.randbelow(1 << 16), 0)
    log = LogWriter.for_instant(mdt.storage, folder, file_slice.file_id, file_slice.base_instant, instant_time, token,
                                mdt.format, max_file_size=0)
    try:
        results = log.append(list(blocks))
    finally:
        log.close()
    last = results[-1]
    name = last.log_path.rsplit("/", 1)[-1]
    meta.add_write_stat(partition, WriteStat.new(
        fileId=file_slice.file_id, path=f"{partition}/{name}", prevCommit=file_slice.base_instant,
        totalWriteBytes=last.size, partitionPath=partition, totalLogBlocks=len(blocks),
        fileSizeInBytes=mdt.storage.size(last.log_path), logVersion=last.version, logOffset=last.offset,
        baseFile=file_slice.base_file.file_name if file_slice.base_file is not None else "", logFiles=[name],
        **counts))
