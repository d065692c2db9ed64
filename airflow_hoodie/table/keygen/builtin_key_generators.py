"""Hudi's field-based key generators: simple, complex, non-partitioned, global delete.
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
)
from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.config_keys.keygen import COMPLEX_NEW_ENCODING, COMPLEX_TABLE_ENCODING
from airflow_hoodie.table.keygen.keygen_config import KEYGEN_PACKAGE


class SimpleKeyGenerator(KeyGenerator):
    """One record key field, one partition field (``SimpleAvroKeyGenerator``)."""

    class_name = KEYGEN_PACKAGE + "SimpleKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        if self.record_key_fields and len(self.record_key_fields) != 1:
            raise HoodieConfigError(
                f"SimpleKeyGenerator takes exactly one record key field, got {self.record_key_fields}; "
                "use org.apache.hudi.keygen.ComplexKeyGenerator for composite keys."
            )
        if len(self.partition_path_fields) > 1:
            raise HoodieConfigError(
                f"SimpleKeyGenerator takes one partition path field, got {self.partition_path_fields}; "
                "use org.apache.hudi.keygen.ComplexKeyGenerator for several."
            )
        if not self.partition_path_fields:
            raise HoodieConfigError(
                "SimpleKeyGenerator needs hoodie.datasource.write.partitionpath.field; "
                "for an unpartitioned table use org.apache.hudi.keygen.NonpartitionedKeyGenerator."
            )

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._simple_record_key(batch, self.record_key_fields[0])

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._partition_value(batch, self.partition_path_fields[0])


class ComplexKeyGenerator(KeyGenerator):
    """Composite record keys ``f1:v1,f2:v2`` and multi-level partition paths."""

    class_name = KEYGEN_PACKAGE + "ComplexKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self.encode_single_field_name = _single_field_prefixed(self.config)

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1 and not self.encode_single_field_name:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        segs = [self._partition_value(batch, f) for f in self.partition_path_fields]
        return self._join_partitions(segs, batch.num_rows)


def _single_field_prefixed(cfg: HoodieConfig) -> bool:
    """Whether a single-field complex key is written as ``field:value`` (HUDI-7001 saga).

    Hudi 0.14.0 and earlier (and every fixed release) write ``field:value``; 0.14.1, 0.15.0 and
    1.0.0-1.0.2 wrote the bare value. A table-recorded encoding wins over the writer flag. Table
    version 9 locks ``field:value`` (KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen: the
    flag only applies below version 9), so its record index and secondary indexes keep matching.
    """
    recorded = (cfg.get(COMPLEX_TABLE_ENCODING.key) or "").strip().upper()
    if recorded:
        if recorded not in ("FIELD_PREFIXED", "VALUE_ONLY"):
            raise HoodieConfigError(
                f"hoodie.table.complex.keygen.encoding={recorded!r} must be FIELD_PREFIXED or VALUE_ONLY."
            )
        return recorded == "FIELD_PREFIXED"
    if release_of(_table_version(cfg)).locks_complex_key_encoding:
        return True
    return not cfg.get_bool(COMPLEX_NEW_ENCODING.key)


def _table_version(cfg: HoodieConfig) -> int:
    """The version the keys are made for: the write's (hoodie.write.table.version), else the
    table's own (hoodie.properties read as key generator settings)."""
    for key in ("hoodie.write.table.version", "hoodie.table.version"):
        if key in cfg:
            raw = (cfg.get(key) or "").strip()
            if raw.isdigit():
                return int(raw)
    return 6


class NonpartitionedKeyGenerator(KeyGenerator):
    """Every record in the single, empty-named partition."""

    class_name = KEYGEN_PACKAGE + "NonpartitionedKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self.partition_path_fields = []

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return pa.array([""] * batch.num_rows, pa.string())


class GlobalDeleteKeyGenerator(KeyGenerator):
    """Composite record keys, empty partition path (deletes across all partitions)."""

    class_name = KEYGEN_PACKAGE + "GlobalDeleteKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return pa.array([""] * batch.num_rows, pa.string())
