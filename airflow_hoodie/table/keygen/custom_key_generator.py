"""CustomKeyGenerator: per partition field, SIMPLE or TIMESTAMP (``field:TYPE``).
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
)
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.keygen.keygen_config import KEYGEN_PACKAGE
from airflow_hoodie.table.keygen.timestamp_key_generator import TimestampPartitioner


class CustomKeyGenerator(KeyGenerator):
    """Partition fields typed ``field:SIMPLE`` or ``field:TIMESTAMP``, joined with ``/``."""

    class_name = KEYGEN_PACKAGE + "CustomKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self._segments: list[tuple[str, TimestampPartitioner | None]] = []
        for spec in self.partition_path_fields:
            if ":" not in spec:
                raise HoodieConfigError(
                    f"Partition field {spec!r}: CustomKeyGenerator needs field:SIMPLE or field:TIMESTAMP "
                    "in hoodie.datasource.write.partitionpath.field."
                )
            name, kind = (s.strip() for s in spec.split(":", 1))
            kind = kind.upper()
            if kind == "SIMPLE":
                self._segments.append((name, None))
            elif kind == "TIMESTAMP":
                self._segments.append((name, TimestampPartitioner(self, name)))
            else:
                raise HoodieConfigError(f"Partition field {spec!r}: type must be SIMPLE or TIMESTAMP.")

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        segs = [self._partition_value(batch, name) if part is None else part.paths(batch) for name, part in self._segments]
        return self._join_partitions(segs, batch.num_rows)
