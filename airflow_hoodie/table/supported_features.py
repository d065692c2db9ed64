"""The table features we handle, and a clear refusal for every other one.

A reader that skips a feature it does not know returns rows that look right and are not
(an ORC table read as "no parquet files", a custom payload merged as latest-wins). So every
entry point -- reads, the CLI, writes and table services -- asks :func:`check_supported`
first and gets a :class:`HoodieNotSupportedError` naming the feature and what to do,
before it reads or changes anything.
"""

from __future__ import annotations

from typing import Mapping

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.table_format import READABLE_TABLE_VERSIONS, TableFormat

BASE_FILE_FORMAT = "hoodie.table.base.file.format"
MULTIPLE_BASE_FILE_FORMATS = "hoodie.table.multiple.base.file.formats.enable"
LOG_FILE_FORMAT = "hoodie.table.log.file.format"
BOOTSTRAP_BASE_PATH = "hoodie.bootstrap.base.path"
#: Hudi 1.1's pluggable table format; only Hudi's own ("native") timeline and files are read
TABLE_FORMAT = "hoodie.table.format"
#: Hudi's reserved instant times of a bootstrap commit (metadata-only and full record)
BOOTSTRAP_INSTANTS = ("00000000000001", "00000000000002")

#: (key, the one value we read, what it names, advice) of the table's storage formats
FORMAT_SETTINGS = (
    (TABLE_FORMAT, "native", "table format", "Only Hudi's native table format is read; use the engine of that format."),
    (BASE_FILE_FORMAT, "PARQUET", "base file format",
     "Only PARQUET base files are read; rewrite the table as PARQUET with Hudi."),
    (MULTIPLE_BASE_FILE_FORMATS, "false", "multiple base file formats",
     "Only PARQUET base files are read; rewrite the table as PARQUET with Hudi."),
    (LOG_FILE_FORMAT, "HOODIE_LOG", "log file format", "Only Hudi's HOODIE_LOG format is read."),
)

MERGE_MODE_KEYS = ("hoodie.record.merge.mode", "hoodie.write.record.merge.mode", "hoodie.table.record.merge.mode")
MERGE_STRATEGY_KEYS = ("hoodie.record.merge.strategy.id", "hoodie.compaction.record.merger.strategy")
PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.table.payload.class",
                "hoodie.table.legacy.payload.class", "hoodie.datasource.write.payload.class")
MERGER_IMPL_KEYS = ("hoodie.datasource.write.record.merger.impls", "hoodie.write.record.merge.custom.implementation.classes")

SUPPORTED_MERGE_MODES = ("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING")
#: HoodieRecordMerger strategy ids: event time, commit time, payload-based (the payload decides)
SUPPORTED_MERGE_STRATEGIES = (
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
    "ce9acb64-bde0-424c-9b91-f6ebba25356d",
    "00000000-0000-0000-0000-000000000000",
)
#: payloads whose semantics the merge reproduces (latest wins / greatest ordering value wins)
SUPPORTED_PAYLOADS = (
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "org.apache.hudi.common.model.EventTimeAvroPayload",
)
#: Hudi's own record mergers of the two supported modes (Avro and Spark records)
SUPPORTED_MERGER_IMPLS = (
    "org.apache.hudi.common.model.HoodieAvroRecordMerger",
    "org.apache.hudi.common.model.OverwriteWithLatestMerger",
    "org.apache.hudi.DefaultSparkRecordMerger",
    "org.apache.hudi.OverwriteWithLatestSparkRecordMerger",
    "org.apache.hudi.common.model.EventTimeRecordMerger",
    "org.apache.hudi.common.table.read.EventTimeRecordMerger",
)


def _refuse(where: str, feature: str, advice: str) -> HoodieNotSupportedError:
    return HoodieNotSupportedError(f"{where}: {feature} is not supported by airflow-hoodie; nothing was read or "
                                   f"changed. {advice}")


def check_merge_supported(props: Mapping[str, str], where: str) -> None:
    """The merge semantics in ``props`` (table or writer config) are ones we reproduce."""
    for key in MERGE_MODE_KEYS:
        mode = (props.get(key) or "").strip().upper()
        if mode and mode not in SUPPORTED_MERGE_MODES:
            raise _refuse(where, f"record merge mode {mode} ({key})",
                          f"Supported: {' and '.join(SUPPORTED_MERGE_MODES)}. Read or write this table with Hudi, "
                          "whose engine runs the custom merger.")
    for key in MERGE_STRATEGY_KEYS:
        strategy = (props.get(key) or "").strip()
        if strategy and strategy not in SUPPORTED_MERGE_STRATEGIES:
            raise _refuse(where, f"custom record merge strategy {strategy} ({key})",
                          "Supported are Hudi's event-time, commit-time and payload-based strategies; use Hudi "
                          "itself for a table with a custom merger.")
    for key in MERGER_IMPL_KEYS:
        for impl in (c.strip() for c in (props.get(key) or "").split(",")):
            if impl and impl not in SUPPORTED_MERGER_IMPLS:
                raise _refuse(where, f"custom record merger class {impl} ({key})",
                              "Remove it (Hudi's own mergers are supported) or use Hudi itself.")
    for key in PAYLOAD_KEYS:
        payload = (props.get(key) or "").strip()
        if payload and payload not in SUPPORTED_PAYLOADS:
            raise _refuse(where, f"payload class {payload} ({key})",
                          f"Supported payloads: {', '.join(p.rsplit('.', 1)[-1] for p in SUPPORTED_PAYLOADS)}; "
                          "its merge rules would be silently replaced by another's. Use Hudi itself for this table.")


def check_supported(props: Mapping[str, str], timestamps: list[str], where: str) -> None:
    """Refuse a table (``hoodie.properties`` + its instant times) using a feature we do not handle."""
    version = int(props.get("hoodie.table.version") or 6)
    if not TableFormat.for_version(version).readable:
        raise _refuse(where, f"Hudi table version {version}",
                      f"Supported table versions: {', '.join(map(str, READABLE_TABLE_VERSIONS))} (Hudi 0.12/0.13, "
                      "0.14/0.15, 1.0, 1.1). Upgrade or downgrade the table with Hudi to one of them.")
    for key, default, label, advice in FORMAT_SETTINGS:
        value = (props.get(key) or default).strip()
        if value.lower() != default.lower():
            raise _refuse(where, f"{label} {value} ({key})", advice)
    if (props.get(BOOTSTRAP_BASE_PATH) or "").strip() or any(ts in BOOTSTRAP_INSTANTS for ts in timestamps):
        raise _refuse(where, f"a bootstrap table (source {props.get(BOOTSTRAP_BASE_PATH) or 'unknown'})",
                      "Its records live partly in the bootstrap source files; read it with Hudi, or rewrite it "
                      "as a regular Hudi table (e.g. a full-record bootstrap followed by a clustering).")
    check_merge_supported(props, where)
