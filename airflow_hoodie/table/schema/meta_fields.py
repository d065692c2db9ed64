"""Hudi's meta fields: the five columns every record of a table carries, named once.

Hudi puts them in front of the data columns of base files and log records
(``HoodieRecord.HOODIE_META_COLUMNS``); readers, writers and the merge all address
records through them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"

#: in the order Hudi puts them in front of the data columns
META_COLUMNS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)

#: an input column that turns a record into a delete (Hudi's soft-delete marker)
IS_DELETED = "_hoodie_is_deleted"


def without_meta_values(table: pa.Table) -> pa.Table:
    """``table`` with its meta columns all null: how a table without meta fields
    (``hoodie.populate.meta.fields=false``) stores them, present but empty."""
    import pyarrow as pa  # noqa: PLC0415 - the names above are imported where pyarrow is not

    for name in META_COLUMNS:
        if name in table.column_names:
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), pa.nulls(table.num_rows, table.schema.field(i).type))
    return table
