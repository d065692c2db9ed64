"""Hudi's meta fields: the five columns every record of a table carries, named once.

Hudi puts them in front of the data columns of base files and log records
(``HoodieRecord.HOODIE_META_COLUMNS``); readers, writers and the merge all address
records through them.
"""

from __future__ import annotations

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"

#: in the order Hudi puts them in front of the data columns
META_COLUMNS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)

#: an input column that turns a record into a delete (Hudi's soft-delete marker)
IS_DELETED = "_hoodie_is_deleted"
