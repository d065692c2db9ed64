"""The archived timeline: instants moved out of the active timeline.

Archival keeps the active timeline short. Up to table version 6 it writes old instants
(every state, with their metadata) as ``HoodieArchivedMetaEntry`` Avro records into
log-format files ``.hoodie/archived/.commits_.archive.<N>_<writeToken>``; from version 8
it writes completed instants into the LSM-tree history (:mod:`lsm_timeline`). Both read
back into one :class:`ArchivedTimeline`, for incremental queries and time travel over
old ranges, the cleaner's view of history and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
from airflow_hoodie.table.log.data_block import decode_avro_records
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import read_log_blocks
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    normalize_instant_time,
)
from airflow_hoodie.table.timeline.lsm_timeline import read_records
from airflow_hoodie.table.timeline.timeline import Timeline, as_json_metadata, collapse_states
from airflow_hoodie.table.timeline.timeline_paths import METAFOLDER

ARCHIVE_FILE_PREFIX = "commits"

#: HoodieArchivedMetaEntry field holding the metadata of each action/state.
_METADATA_FIELDS = {
    (Action.COMMIT, State.COMPLETED): "hoodieCommitMetadata",
    (Action.DELTA_COMMIT, State.COMPLETED): "hoodieCommitMetadata",
    (Action.CLEAN, State.COMPLETED): "hoodieCleanMetadata",
    (Action.CLEAN, State.REQUESTED): "hoodieCleanerPlan",
    (Action.CLEAN, State.INFLIGHT): "hoodieCleanerPlan",
    (Action.ROLLBACK, State.COMPLETED): "hoodieRollbackMetadata",
    (Action.SAVEPOINT, State.COMPLETED): "hoodieSavePointMetadata",
    (Action.COMPACTION, State.REQUESTED): "hoodieCompactionPlan",
    (Action.COMPACTION, State.INFLIGHT): "hoodieCompactionPlan",
    (Action.LOG_COMPACTION, State.REQUESTED): "hoodieCompactionPlan",
    (Action.LOG_COMPACTION, State.INFLIGHT): "hoodieCompactionPlan",
    (Action.REPLACE_COMMIT, State.COMPLETED): "hoodieReplaceCommitMetadata",
    (Action.REPLACE_COMMIT, State.REQUESTED): "hoodieRequestedReplaceMetadata",
    (Action.REPLACE_COMMIT, State.INFLIGHT): "HoodieInflightReplaceMetadata",
    (Action.INDEXING, State.COMPLETED): "hoodieIndexCommitMetadata",
}

_STATE_NAMES = {"REQUESTED": State.REQUESTED, "INFLIGHT": State.INFLIGHT, "COMPLETED": State.COMPLETED}


@dataclass
class ArchivedTimeline:
    """Instants found in the archive, plus each archived entry (all states)."""

    instants: list[Instant] = field(default_factory=list)
    #: one dict per archived record: HoodieArchivedMetaEntry fields, plus "_instant".
    entries: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: archive files (or blocks) that could not be decoded and were skipped.
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def load(
        cls, storage: Storage, base_path: str, archive_folder: str = "archived", strict: bool = False
    ) -> "ArchivedTimeline":
        """Read every archive file in version order.

        Corrupt blocks (a crash during archival) are skipped like Hudi skips them;
        ``strict=True`` raises instead.
        """

        folder = Storage.join(base_path, METAFOLDER, archive_folder)
        files = []
        for st in storage.list_dir(folder):
            if st.is_dir:
                continue
            parsed = parse_log_file_name(st.name)
            if parsed is None or parsed.ext != ".archive" or parsed.file_id != ARCHIVE_FILE_PREFIX:
                continue
            files.append((parsed.version, parsed.write_token or "", st.path))
        files.sort()
        out = cls(files=[p for _, _, p in files])
        history: list[Instant] = []
        for _, _, path in files:
            try:
                for block in read_log_blocks(storage, path):
                    if block.corrupt or block.block_type != BlockType.AVRO_DATA:
                        if block.corrupt:
                            if strict:
                                raise HoodieCorruptedDataError(
                                    f"Corrupt block at byte {block.offset} of archive file {storage.uri(path)}."
                                )
                            out.skipped.append(f"{storage.uri(path)}@{block.offset}")
                        continue
                    for rec in decode_avro_records(block):
                        inst = _entry_instant(rec)
                        if inst is None:
                            continue
                        rec = dict(rec)
                        rec["_instant"] = inst
                        out.entries.append(rec)
                        history.append(inst)
            except HoodieCorruptedDataError:
                if strict:
                    raise
                out.skipped.append(storage.uri(path))
        out.instants = collapse_states(history)
        return out

    @classmethod
    def load_lsm(cls, storage: Storage, folder: str) -> "ArchivedTimeline":
        """Read a version 8+ table's LSM history (completed instants with completion times)."""

        out = cls(files=[folder])
        for rec in read_records(storage, folder):
            if rec.action not in Action.ALL:
                continue
            inst = Instant(rec.instant_time, rec.action, State.COMPLETED, completion_time=rec.completion_time)
            out.entries.append({"_instant": inst, "metadata": rec.metadata, "plan": rec.plan})
            out.instants.append(inst)
        out.instants.sort(key=lambda i: i.sort_key)
        return out

    # ------------------------------------------------------------------ access
    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    @property
    def timestamps(self) -> list[str]:
        return [i.timestamp for i in self.instants]

    def as_timeline(self) -> Timeline:
        """The archived instants as a (storage-less) :class:`Timeline` for its filters."""
        return Timeline(self.instants, history=[e["_instant"] for e in self.entries])

    def entry(self, ts: str, state: State | None = None) -> dict[str, Any] | None:
        """The archived record of ``ts`` (latest state unless ``state`` is given)."""
        cands = [e for e in self.entries if e["_instant"].timestamp == ts]
        if state is not None:
            cands = [e for e in cands if e["_instant"].state == state]
        if not cands:
            return None
        return max(cands, key=lambda e: e["_instant"].state.rank)

    def metadata(self, ts: str, state: State | None = None) -> dict[str, Any] | None:
        """The action metadata (e.g. ``hoodieCommitMetadata``) of an archived instant."""
        e = self.entry(ts, state)
        if e is None:
            return None
        inst: Instant = e["_instant"]
        if "metadata" in e:  # an LSM history record: the completed file's bytes
            return _decode_lsm_metadata(inst, e["metadata"])
        name = _METADATA_FIELDS.get((inst.action, inst.state))
        if name and e.get(name) is not None:
            return e[name]
        for key, value in e.items():
            if key.lower().startswith("hoodie") and isinstance(value, dict):
                return value
        return None

    def completion_times(self) -> dict[str, str]:
        """Requested time -> completion time (version 8+ history only)."""
        return {i.timestamp: i.completion_time for i in self.instants if i.completion_time}

    def completed_commits(self) -> list[Instant]:
        return [i for i in self.instants if i.is_completed and i.action in Action.COMMITS]

    def between(self, start_exclusive: str | None, end_inclusive: str | None) -> list[Instant]:
        lo = normalize_instant_time(start_exclusive) if start_exclusive else None
        hi = normalize_instant_time(end_inclusive) if end_inclusive else None
        return [
            i for i in self.instants
            if (lo is None or normalize_instant_time(i.timestamp) > lo)
            and (hi is None or normalize_instant_time(i.timestamp) <= hi)
        ]


def _entry_instant(rec: dict[str, Any]) -> Instant | None:
    ts, action = rec.get("commitTime"), rec.get("actionType")
    if not ts or not action or action not in Action.ALL:
        return None
    state = _STATE_NAMES.get(str(rec.get("actionState") or "COMPLETED").upper(), State.COMPLETED)
    if state == State.COMPLETED and action in (Action.COMPACTION, Action.LOG_COMPACTION):
        action = Action.COMMIT if action == Action.COMPACTION else Action.DELTA_COMMIT
    if state == State.REQUESTED and action == Action.SAVEPOINT:
        state = State.INFLIGHT
    try:
        return Instant(ts, action, state)
    except Exception:  # malformed timestamp in a foreign archive: skip the entry
        return None


def _decode_lsm_metadata(inst: Instant, data: bytes | None) -> dict[str, Any] | None:
    """An archived instant's metadata as a dict: Avro (Hudi 1.x) or JSON (older writers)."""


    if not data:
        return None
    data = as_json_metadata(inst, data)
    if data[:4] == b"Obj\x01":
        return avro_codec.deserialize(data)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HoodieCorruptedDataError(
            f"The archived metadata of {inst.timestamp} ({inst.action}) is neither Avro nor JSON."
        ) from exc
