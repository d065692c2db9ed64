"""TimestampBasedKeyGenerator: partition paths from a time field, formatted as Hudi formats them.

The field is read as a unix timestamp (any unit), a date string in one of several input
formats, or a logical date/timestamp, and written with the output format in the output
zone, the way TimestampBasedAvroKeyGenerator does with Joda-Time.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.keygen import (
    DATETIME_PARSER,
    TS_INPUT_FORMAT,
    TS_INPUT_FORMAT_DELIMITER,
    TS_INPUT_TZ,
    TS_OUTPUT_FORMAT,
    TS_OUTPUT_TZ,
    TS_SCALAR_UNIT,
    TS_TYPE,
    TS_TZ,
)
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.keygen import joda_zone as jz
from airflow_hoodie.table.keygen import timestamp_format as tf
from airflow_hoodie.table.keygen.java_text import column_of, escape_array
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.keygen.keygen_config import KEYGEN_PACKAGE

_TIME_UNIT_MS = {
    "NANOSECONDS": (1, 1_000_000),
    "MICROSECONDS": (1, 1000),
    "MILLISECONDS": (1, 1),
    "SECONDS": (1000, 1),
    "MINUTES": (60_000, 1),
    "HOURS": (3_600_000, 1),
    "DAYS": (86_400_000, 1),
}


_TS_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")


_LONG_MAX = 2**63 - 1


_LONG_MIN = -(2**63)


class TimestampPartitioner:
    """The partition side of ``TimestampBasedAvroKeyGenerator`` for one field."""

    def __init__(self, owner: KeyGenerator, field: str):
        cfg = owner.config
        self.owner = owner
        self.field = field
        parser = (cfg.get(DATETIME_PARSER.key) or DATETIME_PARSER.default or "").strip()
        if parser != DATETIME_PARSER.default:
            raise HoodieNotSupportedError(f"Custom date time parser {parser!r} is not supported.")
        ts_type = (cfg.get(TS_TYPE.key) or "").strip().upper()
        input_formats = cfg.get(TS_INPUT_FORMAT.key) or ""
        if not ts_type:
            if input_formats.strip():
                # hoodie.properties keeps the formats but not the type; date strings are implied.
                ts_type = "DATE_STRING"
            else:
                raise HoodieConfigError(
                    "Setting 'hoodie.keygen.timebased.timestamp.type' is required for TimestampBasedKeyGenerator "
                    f"(one of {', '.join(_TS_TYPES)})."
                )
        if ts_type not in _TS_TYPES:
            raise HoodieConfigError(f"hoodie.keygen.timebased.timestamp.type={ts_type!r} is not one of {', '.join(_TS_TYPES)}.")
        self.ts_type = ts_type
        unit = {"EPOCHMILLISECONDS": "MILLISECONDS", "EPOCHMICROSECONDS": "MICROSECONDS", "UNIX_TIMESTAMP": "SECONDS"}.get(ts_type)
        if ts_type == "SCALAR":
            unit = (cfg.get(TS_SCALAR_UNIT.key) or "SECONDS").strip().upper()
            if unit not in _TIME_UNIT_MS:
                raise HoodieConfigError(f"hoodie.keygen.timebased.timestamp.scalar.time.unit={unit!r} is not a TimeUnit.")
        self.time_unit = unit
        out_fmt = cfg.get(TS_OUTPUT_FORMAT.key)
        self.output = tf.require_pattern(out_fmt, TS_OUTPUT_FORMAT.key)
        if TS_TZ.key in cfg or any(a in cfg for a in TS_TZ.alternatives):
            both = jz.java_time_zone(cfg.get(TS_TZ.key) or "GMT")
            self.input_zone, self.output_zone = both, both
        else:
            self.input_zone = jz.java_time_zone(cfg.get(TS_INPUT_TZ.key))
            self.output_zone = jz.java_time_zone(cfg.get(TS_OUTPUT_TZ.key))
        self.inputs: list[tf.JodaPattern] = []
        if ts_type in ("DATE_STRING", "MIXED"):
            delim = cfg.get(TS_INPUT_FORMAT_DELIMITER.key) or ","
            pats = [p.strip() for p in re.split(delim, input_formats) if p.strip()]
            if not pats:
                raise HoodieConfigError(
                    f"{TS_INPUT_FORMAT.key} is required when the timestamp type is {ts_type}."
                )
            self.inputs = [tf.JodaPattern(p) for p in pats]

    def _default_value(self) -> Any:
        if self.ts_type in ("DATE_STRING", "MIXED"):
            zone = self.input_zone or self.output_zone or jz.UTC
            return self.inputs[0].format(np.array([1], dtype=np.int64), [zone])[0].as_py()
        return 1

    def _to_millis(self, longs: np.ndarray) -> np.ndarray:
        if self.time_unit is None:
            raise HoodieKeyError(
                f"Partition field {self.field!r} is numeric but the timestamp type is {self.ts_type}; "
                "set hoodie.keygen.timebased.timestamp.type to UNIX_TIMESTAMP, EPOCHMILLISECONDS or SCALAR."
            )
        mul, div = _TIME_UNIT_MS[self.time_unit]
        if div > 1:
            q = np.abs(longs) // div
            return np.where(longs < 0, -q, q)  # Java division truncates toward zero
        with np.errstate(over="ignore"):
            out = longs * mul
        lim = _LONG_MAX // mul
        return np.where(longs > lim, _LONG_MAX, np.where(longs < -lim, _LONG_MIN, out))

    def paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        col = column_of(batch, self.field)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        t = col.type
        n = len(col)
        zones: list[jz.Zone] = [self.output_zone or jz.DEFAULT_JVM_ZONE]
        zone_index = np.zeros(n, dtype=np.int64)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            if not self.inputs:
                raise HoodieKeyError(
                    f"Partition field {self.field!r} holds strings; set hoodie.keygen.timebased.timestamp.type="
                    "DATE_STRING and hoodie.keygen.timebased.input.dateformat."
                )
            values = col.cast(pa.string())
            if values.null_count:  # Hudi substitutes epoch+1ms rendered in the first input format
                values = pc.fill_null(values, self._default_value())
            instants, parsed_zones, parsed_index = tf.parse_to_zones(self.inputs, values, self.input_zone)
            if self.output_zone is None:
                zones, zone_index = parsed_zones, parsed_index
        else:
            instants = self._instants(col)
        text = self.output.format(instants, zones, zone_index)
        if self.owner.url_encode_partitioning:
            text = escape_array(text)
        if self.owner.hive_style_partitioning:
            text = pc.binary_join_element_wise(f"{self.field}=", text, "")
        return text

    def _instants(self, col: pa.Array) -> np.ndarray:
        """Epoch millis of non-string values: Java ``longValue()`` then the configured time unit.

        Floats truncate, decimals truncate, dates count epoch days (in the configured unit,
        as Hudi does), timestamps are their raw Avro long unless consistent logical timestamps
        are enabled (then they are instants already). Nulls become ``1L`` like Hudi's default.
        """
        t = col.type
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        already_ms = False
        if pa.types.is_integer(t):
            longs = pc.fill_null(col.cast(pa.int64()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
        elif pa.types.is_floating(t):
            v = pc.fill_null(col.cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False)
            longs = np.where(np.isnan(v), 0, np.clip(np.trunc(v), -(2.0**63), 2.0**63 - 1024)).astype(np.int64)
        elif pa.types.is_decimal(t):
            longs = np.array([1 if d is None else int(d) for d in col.to_pylist()], dtype=np.int64)
        elif pa.types.is_date(t):
            longs = pc.fill_null(col.cast(pa.date32()).cast(pa.int32()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
        elif pa.types.is_timestamp(t):
            raw = pc.fill_null(pc.cast(col, pa.int64()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
            if self.owner.consistent_logical_timestamp and t.unit in ("ms", "us"):
                ms = raw if t.unit == "ms" else np.where(raw < 0, -(np.abs(raw) // 1000), raw // 1000)
                longs = np.where(valid, ms, raw)
                already_ms = True
            else:
                longs = raw
        else:
            raise HoodieNotSupportedError(
                f"Unexpected type for partition field {self.field!r}: {t} (TimestampBasedKeyGenerator takes "
                "numbers, decimals, dates, timestamps or date strings)."
            )
        millis = self._to_millis(longs) if not (already_ms and valid.all()) else longs
        if already_ms and not valid.all():
            millis = np.where(valid, longs, self._to_millis(longs))
        return millis


class TimestampBasedKeyGenerator(KeyGenerator):
    """Simple record key; the partition path is a formatted timestamp of one field."""

    class_name = KEYGEN_PACKAGE + "TimestampBasedKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        if len(self.partition_path_fields) != 1:
            raise HoodieConfigError(
                "TimestampBasedKeyGenerator needs exactly one partition path field, got "
                f"{self.partition_path_fields or 'none'}."
            )
        self._partitioner = TimestampPartitioner(self, self.partition_path_fields[0])

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if self.record_key_fields and len(self.record_key_fields) != 1:
            raise HoodieConfigError(
                f"TimestampBasedKeyGenerator takes one record key field, got {self.record_key_fields}."
            )
        return self._simple_record_key(batch, self.record_key_fields[0])

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._partitioner.paths(batch)
