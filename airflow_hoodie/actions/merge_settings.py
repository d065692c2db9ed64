"""The merge semantics of a write: its merge mode and ordering fields.

Hudi 1.x names the merge mode (``hoodie.record.merge.mode``) and several ordering fields
(``hoodie.table.ordering.fields``, compared as a tuple); a version 6 writer names only a
payload class and one precombine field. Every step of a write that compares two versions of a
record (batch dedupe, the merge with the stored record, the log's delete ordering values) asks
here, so they agree. CUSTOM merging (a payload class or merger that is Java code) is refused.
"""

from __future__ import annotations

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.merge import MERGE_MODE, MERGE_STRATEGY_ID
from airflow_hoodie.config_keys.write import ORDERING_FIELDS, PRECOMBINE_FIELD, WRITE_TABLE_VERSION
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table import properties as tp
from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.record_merger import MergeMode

PAYLOAD_OPTION = "hoodie.datasource.write.payload.class"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_AVRO_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
#: HoodieRecordMerger's strategy ids of the two built-in merge modes
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
#: the payload classes whose merge a built-in mode reproduces (any other one means CUSTOM)
MODE_OF_PAYLOAD = {
    DEFAULT_PAYLOAD: MergeMode.EVENT_TIME_ORDERING,
    EVENT_TIME_AVRO_PAYLOAD: MergeMode.EVENT_TIME_ORDERING,
    OVERWRITE_PAYLOAD: MergeMode.COMMIT_TIME_ORDERING,
}
MODE_OF_STRATEGY = {
    EVENT_TIME_STRATEGY_ID: MergeMode.EVENT_TIME_ORDERING,
    COMMIT_TIME_STRATEGY_ID: MergeMode.COMMIT_TIME_ORDERING,
}
STRATEGY_OF_MODE = {m: s for s, m in MODE_OF_STRATEGY.items()}


def _named(config: HoodieConfig, *keys: str) -> str | None:
    """The value of the first of ``keys`` the user set (registry defaults do not count)."""
    for key in keys:
        if key in config:
            return config.get(key)
    return None


def write_ordering_fields(config: HoodieConfig) -> list[str]:
    """The write's ordering fields, compared in order: ``hoodie.table.ordering.fields`` when set,
    else the precombine field (a comma-separated list too, as Hudi 1.x reads it). Hudi 0.14's
    default ``ts`` applies to version 6 only: a version 8/9 table without ordering fields orders
    by commit time, and its readers do too."""
    if ORDERING_FIELDS in config:
        return config.get_list(ORDERING_FIELDS)
    version = (_named(config, WRITE_TABLE_VERSION) or "6").strip()
    if version.isdigit() and not release_of(int(version)).precombine_defaults_to_ts:
        return explicit_ordering_fields(config)
    return config.get_list(PRECOMBINE_FIELD)


def explicit_ordering_fields(config: HoodieConfig) -> list[str]:
    """Ordering fields the user named (Hudi 1.x has no default ordering field)."""
    for key in (ORDERING_FIELDS, PRECOMBINE_FIELD, tp.PRECOMBINE_FIELD):
        if key in config:
            return config.get_list(key)
    return []


def write_merge_mode(config: HoodieConfig) -> MergeMode | None:
    """The merge mode a write names (``hoodie.record.merge.mode``, or Hudi 1.x's write option
    ``hoodie.write.record.merge.mode``); None when unset. CUSTOM is refused: its merger is Java code."""
    raw = (config.get(MERGE_MODE) or "").strip().upper()
    if not raw:
        return None
    if raw == "CUSTOM":
        raise HoodieNotSupportedError(
            f"{MERGE_MODE}=CUSTOM: a custom record merger is Java code airflow-hoodie cannot run; nothing was "
            "written. Use EVENT_TIME_ORDERING (greatest ordering value wins) or COMMIT_TIME_ORDERING (latest write "
            "wins), or write this table with Hudi itself.")
    if raw not in MergeMode.__members__:
        raise HoodieConfigError(f"{MERGE_MODE}={raw!r} is not a merge mode; use EVENT_TIME_ORDERING or "
                                "COMMIT_TIME_ORDERING.")
    return MergeMode(raw)


def inferred_merge_mode(config: HoodieConfig, ordering: list[str]) -> tuple[MergeMode, str | None]:
    """Hudi 1.x's inference of a new table's merge mode (HoodieTableConfig's merging-config
    inference): an explicit payload class or strategy id decides, else the explicit mode, else
    event time when ordering fields are set. Returns the mode and the payload class named."""
    mode = write_merge_mode(config)
    payload = _named(config, PAYLOAD_OPTION, tp.PAYLOAD_CLASS)
    strategy = _named(config, MERGE_STRATEGY_ID, "hoodie.compaction.record.merger.strategy")
    if not payload and not strategy:
        return mode or (MergeMode.EVENT_TIME_ORDERING if ordering else MergeMode.COMMIT_TIME_ORDERING), None
    by_payload = MODE_OF_PAYLOAD.get(payload) if payload else None
    by_strategy = MODE_OF_STRATEGY.get(strategy) if strategy else None
    if (payload and by_payload is None) or (strategy and by_strategy is None):
        raise HoodieNotSupportedError(
            f"{'payload class ' + payload if payload and by_payload is None else 'record merge strategy ' + str(strategy)} "
            "means Hudi's CUSTOM merge mode, whose merger is Java code airflow-hoodie cannot run; nothing was written. "
            "Use the EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING merge mode, or write this table with Hudi itself.")
    if by_payload and by_strategy and by_payload != by_strategy:
        raise HoodieConfigError(f"{PAYLOAD_OPTION}={payload} ({by_payload.value}) and {MERGE_STRATEGY_ID}={strategy} "
                                f"({by_strategy.value}) contradict each other; set only one of them.")
    inferred = by_strategy or by_payload
    if mode is not None and mode != inferred:
        raise HoodieConfigError(f"{MERGE_MODE}={mode.value} contradicts the payload class or merge strategy set "
                                f"with it ({inferred.value}); drop one of them.")
    return inferred, payload


def version6_payload_class(config: HoodieConfig) -> str | None:
    """The payload class a new version 6 table records, its readers' only merge setting: the
    one the writer names, else the one that merges as the merge mode it names (Hudi 1.x infers
    it so for a version 6 table), else Hudi 0.x's default. Without that, a table written under
    EVENT_TIME_ORDERING was read (and compacted) by commit time: an older update in a log file
    won over the newer record in the base file."""
    payload = _named(config, PAYLOAD_OPTION)
    mode = write_merge_mode(config)
    if payload:
        named_mode = MODE_OF_PAYLOAD.get(payload)
        if mode is not None and named_mode is not None and named_mode != mode:
            raise HoodieConfigError(f"{MERGE_MODE}={mode.value} contradicts {PAYLOAD_OPTION}={payload} "
                                    f"({named_mode.value}); drop one of them.")
        return payload
    if mode is MergeMode.EVENT_TIME_ORDERING:
        return DEFAULT_PAYLOAD
    return config.get(PAYLOAD_OPTION)


def dedupe_ordering_fields(config: HoodieConfig) -> list[str]:
    """The fields a batch's versions of one key are combined by (greatest tuple wins); none under
    commit-time ordering, where the later record of the batch wins."""
    if write_merge_mode(config) is MergeMode.COMMIT_TIME_ORDERING:
        return []
    return write_ordering_fields(config)


def ordering_fields_for_merge(config: HoodieConfig) -> list[str]:
    """The fields an incoming record must beat the stored one by (as a tuple, in order); none when
    the latest write wins. An explicit merge mode decides (Hudi 1.x); without one, version 6's
    payload semantics: ordering-aware only for DefaultHoodieRecordPayload or an explicit
    ``hoodie.payload.ordering.field``."""
    mode = write_merge_mode(config)
    if mode is MergeMode.COMMIT_TIME_ORDERING:
        return []
    if mode is MergeMode.EVENT_TIME_ORDERING:
        return write_ordering_fields(config)
    explicit = _named(config, "hoodie.payload.ordering.field")
    if explicit:
        return [explicit]
    if (config.get(PAYLOAD_OPTION) or "").endswith("DefaultHoodieRecordPayload"):
        return write_ordering_fields(config)
    return []
