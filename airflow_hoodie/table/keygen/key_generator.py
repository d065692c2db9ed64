"""Hudi's key generators over arrow batches: ``_hoodie_record_key`` and ``_hoodie_partition_path``.

Every record Hudi writes is addressed by (record key, partition path), both derived from data
columns by the table's key generator (``org.apache.hudi.keygen``). An upsert only finds the
existing copy of a record if we derive exactly the same strings Hudi did, so this module
follows Hudi 0.14's Avro key generators value for value:

* a field value becomes text the way Java's ``toString`` prints the Avro value: ints and
  longs in decimal, booleans ``true``/``false``, doubles/floats as ``Double.toString`` /
  ``Float.toString`` (``1.0``, ``1.0E10``), decimals as ``BigDecimal.toString``, dates as
  ``yyyy-MM-dd``, timestamps as the epoch micros the file stores, whatever the batch's
  unit (unless ``hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled``);
* simple keys must be non-null and non-empty; complex keys are ``f1:v1,f2:v2`` with
  ``__null__``/``__empty__`` placeholders and fail only when every part is null/empty;
* partition paths join fields with ``/``; null or empty values become
  ``__HIVE_DEFAULT_PARTITION__``; hive style prefixes ``field=``; url-encoding escapes
  like Hive's ``FileUtils.escapePathName``;
* the timestamp-based generator formats the partition field with Joda patterns
  (:mod:`airflow_hoodie.table.keygen.timestamp_format`).

Everything works on whole columns with ``pyarrow.compute``; Python only touches the distinct
values of columns whose Java formatting has no arrow kernel (floats, decimals, url-encoding).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.keygen.java_text import escape_array, field_text
from airflow_hoodie.config_keys.keygen import (
    CONSISTENT_LOGICAL_TIMESTAMP,
    HIVE_STYLE,
    KEYGENERATOR_CLASS,
    KEYGENERATOR_TYPE,
    PARTITIONPATH_FIELD,
    RECORDKEY_FIELD,
    URL_ENCODE,
)
from airflow_hoodie.table.keygen.keygen_config import (
    CLASS_TO_TYPE,
    COMPOSITE_KEY_VALUE_SEPARATOR,
    DEFAULT_PARTITION_PATH,
    EMPTY_RECORDKEY_PLACEHOLDER,
    KEYGEN_PACKAGE,
    KEYGEN_TYPES,
    NULL_RECORDKEY_PLACEHOLDER,
    PARTITION_PATH_SEPARATOR,
    RECORD_KEY_PARTS_SEPARATOR,
)


def _split_fields(raw: str | None) -> list[str]:
    if raw is None:
        return []
    return [f.strip() for f in raw.split(",") if f.strip()]


def _null_or_empty(text: pa.Array) -> np.ndarray:
    mask = pc.or_kleene(pc.is_null(text), pc.equal(pc.utf8_length(text), 0))
    return np.asarray(pc.fill_null(mask, True).to_numpy(zero_copy_only=False), dtype=bool)


class KeyGenerator:
    """Base: config shared by Hudi's built-in key generators, and the factory."""

    class_name = ""

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props or {})
        self.config = cfg
        self.record_key_fields: list[str] = _split_fields(cfg.get(RECORDKEY_FIELD.key))
        self.partition_path_fields: list[str] = _split_fields(cfg.get(PARTITIONPATH_FIELD.key))
        self.hive_style_partitioning = cfg.get_bool(HIVE_STYLE.key)
        self.url_encode_partitioning = cfg.get_bool(URL_ENCODE.key)
        self.consistent_logical_timestamp = cfg.get_bool(CONSISTENT_LOGICAL_TIMESTAMP.key)

    # -- factory ---------------------------------------------------------------------

    @staticmethod
    def key_generator_type(props: Mapping[str, str] | HoodieConfig) -> str:
        """SIMPLE / COMPLEX / TIMESTAMP / CUSTOM / NON_PARTITION / GLOBAL_DELETE for a config."""
        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props)
        cls = (cfg.get(KEYGENERATOR_CLASS.key) or "").strip()
        if cls:
            short = cls.rsplit(".", 1)[-1]
            if short not in CLASS_TO_TYPE:
                raise HoodieNotSupportedError(
                    f"Key generator class {cls!r} is not supported; use one of Hudi's built-in generators "
                    f"({', '.join(sorted({KEYGEN_PACKAGE + k for k in CLASS_TO_TYPE if 'Avro' not in k}))})."
                )
            return CLASS_TO_TYPE[short]
        typ = (cfg.get(KEYGENERATOR_TYPE.key) or "").strip().upper()
        if typ:
            if typ not in KEYGEN_TYPES:
                raise HoodieConfigError(
                    f"hoodie.datasource.write.keygenerator.type={typ!r} is not one of {', '.join(sorted(KEYGEN_TYPES))}."
                )
            return typ
        # KeyGenUtils.inferKeyGeneratorType
        partitions = (cfg.get(PARTITIONPATH_FIELD.key) or "").strip()
        n_keys = len(_split_fields(cfg.get(RECORDKEY_FIELD.key)))
        if not partitions:
            by_partition = "NON_PARTITION"
        elif ":" in partitions.split(",")[0]:
            by_partition = "CUSTOM"
        elif len(partitions.split(",")) == 1:
            by_partition = "SIMPLE"
        else:
            by_partition = "COMPLEX"
        if n_keys > 1 and by_partition == "SIMPLE":
            return "COMPLEX"
        return by_partition

    @staticmethod
    def from_config(props: Mapping[str, str] | HoodieConfig) -> "KeyGenerator":
        """The key generator a write config (or hoodie.properties) describes."""
        # the concrete generators subclass this one: their table is imported when first needed
        from airflow_hoodie.table.keygen.key_generator_types import generator_class  # noqa: PLC0415

        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props)
        return generator_class(KeyGenerator.key_generator_type(cfg))(cfg)

    # -- API -------------------------------------------------------------------------

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        raise NotImplementedError

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        raise NotImplementedError

    def keys(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Array, pa.Array]:
        """(record keys, partition paths) for every row."""
        return self.record_keys(batch), self.partition_paths(batch)

    @property
    def partition_field_names(self) -> list[str]:
        """Partition field names without CustomKeyGenerator's ``:TYPE`` suffixes."""
        return [f.split(":", 1)[0] for f in self.partition_path_fields]

    # -- building blocks (KeyGenUtils) -----------------------------------------------

    @property
    def auto_record_keys(self) -> bool:
        """No record key field: Hudi 0.14+ generates the keys at write time
        (``<instant>_<partition id>_<row id>``), for inserts only."""
        return not self.record_key_fields

    def _require_record_key_fields(self) -> None:
        """Auto-generated keys are legal (see :attr:`auto_record_keys`); callers that need
        keys computed from fields check :attr:`auto_record_keys` first."""

    def _simple_record_key(self, batch: pa.Table | pa.RecordBatch, field: str) -> pa.Array:
        text = field_text(batch, field, self.consistent_logical_timestamp)
        bad = _null_or_empty(text)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = text[row].as_py()
            raise HoodieKeyError(
                f"recordKey value: {value!r} for field: {field!r} cannot be null or empty "
                f"({int(bad.sum())} row(s), first at row {row}). Every record needs a record key."
            )
        return text

    def _complex_record_key(self, batch: pa.Table | pa.RecordBatch, fields: Sequence[str]) -> pa.Array:
        parts: list[pa.Array | str] = []
        all_bad = None
        for i, field in enumerate(fields):
            text = field_text(batch, field, self.consistent_logical_timestamp)
            is_null = np.asarray(pc.is_null(text).to_numpy(zero_copy_only=False), dtype=bool)
            bad = _null_or_empty(text)
            all_bad = bad if all_bad is None else (all_bad & bad)
            value = pc.if_else(
                pa.array(is_null),
                NULL_RECORDKEY_PLACEHOLDER,
                pc.if_else(pa.array(bad), EMPTY_RECORDKEY_PLACEHOLDER, pc.fill_null(text, "")),
            )
            if i:
                parts.append(RECORD_KEY_PARTS_SEPARATOR)
            parts.append(field + COMPOSITE_KEY_VALUE_SEPARATOR)
            parts.append(value)
        if all_bad is not None and all_bad.any():
            row = int(np.flatnonzero(all_bad)[0])
            raise HoodieKeyError(
                f"Record key fields {list(fields)} are all null or empty at row {row} "
                f"({int(all_bad.sum())} row(s)); at least one must have a value."
            )
        return pc.binary_join_element_wise(*parts, "")

    def _partition_value(self, batch: pa.Table | pa.RecordBatch, field: str, text: pa.Array | None = None) -> pa.Array:
        """One field's path segment: default partition, url-encoding and hive style applied."""
        if text is None:
            text = field_text(batch, field, self.consistent_logical_timestamp)
        bad = pa.array(_null_or_empty(text))
        value = text
        if self.url_encode_partitioning:
            value = escape_array(pc.fill_null(text, ""))
        value = pc.if_else(bad, DEFAULT_PARTITION_PATH, value)
        if self.hive_style_partitioning:
            value = pc.binary_join_element_wise(f"{field}=", value, "")
        return value

    def _join_partitions(self, segments: Sequence[pa.Array], n: int) -> pa.Array:
        if not segments:
            return pa.array([""] * n, pa.string())
        if len(segments) == 1:
            return segments[0]
        parts: list[pa.Array | str] = []
        for i, seg in enumerate(segments):
            if i:
                parts.append(PARTITION_PATH_SEPARATOR)
            parts.append(seg)
        return pc.binary_join_element_wise(*parts, "")
