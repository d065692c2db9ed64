"""The live record keys of one file slice: base file keys, plus log data keys, minus log deletes.

One implementation for every reader of keys: the write path's index lookup (a Spark task
or the local executor) and the metadata table's record index, which diffs a file group's
keys before and after an instant to learn which keys the instant inserted or deleted.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.schema.meta_fields import RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage


def slice_record_keys(storage: Storage, base_file: str | None, log_files: Sequence[str], latest_instant: str | None,
                      valid_instants: Iterable[str], timeline_start: str | None = None,
                      key_generator: Mapping[str, str] | None = None) -> pa.Array:
    """Keys of the slice made of ``base_file`` and ``log_files`` (full paths, Hudi's log
    order), reading only blocks of ``valid_instants`` up to ``latest_instant``.
    ``key_generator``: the key generator's settings of a table whose files carry no record
    keys (``hoodie.populate.meta.fields=false``): the base file's keys are derived from its
    key fields, as Hudi's readers of such tables do."""
    pieces: list[pa.Array] = []
    if base_file and key_generator is not None:
        pieces.append(derived_record_keys(pq.read_table(storage.open_input(base_file)), key_generator))
    elif base_file:
        t = pq.read_table(storage.open_input(base_file), columns=[RECORD_KEY])
        pieces.append(t.column(RECORD_KEY).combine_chunks())
    if log_files:
        res = scan_log_files(storage, list(log_files), latest_instant, set(valid_instants),
                             timeline_start=timeline_start)
        cur = pa.concat_arrays(pieces) if pieces else pa.array([], pa.string())
        for blk in res.blocks:
            if blk.is_delete:
                gone = pa.array([d.record_key for d in (blk.deletes or [])], pa.string())
                cur = cur.filter(pc.invert(pc.is_in(cur, value_set=gone)))
            elif blk.table is not None and RECORD_KEY in blk.table.column_names:
                cur = pa.concat_arrays([cur, blk.table.column(RECORD_KEY).combine_chunks().cast(pa.string())])
        pieces = [pc.unique(cur)]
    return pa.concat_arrays(pieces).cast(pa.string()) if pieces else pa.array([], pa.string())


def derived_record_keys(rows: pa.Table, key_generator: Mapping[str, str]) -> pa.Array:
    """The record keys of ``rows`` from their key fields, by the table's key generator (a
    table without meta fields stores none)."""
    from airflow_hoodie.table.keygen.key_generator import KeyGenerator  # noqa: PLC0415 - keygen imports this layer

    return KeyGenerator.from_config(dict(key_generator)).record_keys(rows).cast(pa.string())
