"""What the table services read from a table besides the plain timeline.

The services need file groups *including* replaced ones (the cleaner deletes those) and
the file groups held by pending plans and savepoints; these readers build that straight
from the timeline's plan/metadata files and a listing of the partitions, so clean and
archive do not depend on the file system view hiding what they must see.
"""

from __future__ import annotations

import json
from typing import Any

from airflow_hoodie.actions.service_common import deserialize_plan
from airflow_hoodie.table.file_group.file_group import BaseFile, FileGroup, LogFile, build_file_groups
from airflow_hoodie.table.timeline.instant import Action, Instant, State


def _plan_bytes(timeline: Any, instant: Instant) -> bytes:
    return timeline.read_details(Instant(instant.timestamp, instant.action, State.REQUESTED))


def pending_compaction_operations(timeline: Any) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(partition, fileId) -> (compaction instant, HoodieCompactionOperation) of pending plans."""
    out: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for inst in timeline.instants:
        if inst.action != Action.COMPACTION or inst.state == State.COMPLETED:
            continue
        data = _plan_bytes(timeline, inst)
        if not data:
            continue
        plan = deserialize_plan("HoodieCompactionPlan", data)
        for op in plan.get("operations") or []:
            out[(op.get("partitionPath") or "", op["fileId"])] = (inst.timestamp, op)
    return out


def clustering_plan_of(timeline: Any, instant: Instant) -> dict[str, Any] | None:
    """The clustering plan of a replacecommit, or None (insert_overwrite has none)."""
    data = _plan_bytes(timeline, instant)
    if not data:
        return None
    meta = deserialize_plan("HoodieRequestedReplaceMetadata", data)
    plan = meta.get("clusteringPlan")
    if meta.get("operationType") != "CLUSTER" or not plan:
        return None
    return plan


def pending_clustering_file_groups(timeline: Any) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for inst in timeline.instants:
        if inst.action != Action.REPLACE_COMMIT or inst.state == State.COMPLETED:
            continue
        plan = clustering_plan_of(timeline, inst)
        for group in (plan or {}).get("inputGroups") or []:
            for s in group.get("slices") or []:
                out[(s.get("partitionPath") or "", s["fileId"])] = inst.timestamp
    return out


def replaced_file_groups(timeline: Any) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> completed replacecommit that replaced it."""
    out: dict[tuple[str, str], str] = {}
    for inst in timeline.instants:
        if inst.action != Action.REPLACE_COMMIT or inst.state != State.COMPLETED:
            continue
        meta = json.loads(timeline.read_details(inst) or b"{}")
        for part, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
            for fid in ids:
                out[(part, fid)] = inst.timestamp
    return out


def savepointed_files(timeline: Any) -> set[str]:
    files: set[str] = set()
    for inst in timeline.instants:
        if inst.action != Action.SAVEPOINT or inst.state != State.COMPLETED:
            continue
        meta = deserialize_plan("HoodieSavepointMetadata", timeline.read_details(inst))
        for pm in (meta.get("partitionMetadata") or {}).values():
            files.update(pm.get("savepointDataFile") or [])
    return files


def list_file_groups(table: Any, timeline: Any) -> dict[tuple[str, str], FileGroup]:
    """Every file group on storage with committed base files (replaced ones included).

    A base file counts once its instant is completed (or archived); log files count
    whatever their blocks (the log scanner skips uncommitted blocks), as Hudi's view does.
    Pending compaction instants add their (still empty) new slice.
    """
    storage, base_path = table.storage, table.base_path
    completed = {i.timestamp for i in timeline.instants if i.state == State.COMPLETED}
    first = timeline.first()
    bases: list[BaseFile] = []
    logs: list[LogFile] = []
    prefix = base_path.rstrip("/") + "/"
    for st in storage.list_dir(base_path, recursive=True):
        if st.is_dir:
            continue
        rel = st.path[len(prefix):] if st.path.startswith(prefix) else st.path
        if rel.startswith(".hoodie/") or "/.hoodie/" in rel:
            continue
        partition = rel.rsplit("/", 1)[0] if "/" in rel else ""
        name = st.name
        if name.endswith(".parquet"):
            bf = BaseFile.from_path(st.path, st.size, partition)
            if bf is None:
                continue
            if bf.commit_time in completed or (first is not None and bf.commit_time < first.timestamp):
                bases.append(bf)
        elif ".log." in name:
            lf = LogFile.from_path(st.path, st.size, partition)
            if lf is not None:
                logs.append(lf)
    groups = build_file_groups(bases, logs)
    for (part, fid), (ts, _op) in pending_compaction_operations(timeline).items():
        fg = groups.get((part, fid))
        if fg is not None and fg.slice_at(ts) is None:
            fg.add_empty_slice(ts)
    for fg in groups.values():
        fg.slices.sort(key=lambda s: s.base_instant)
        for s in fg.slices:
            s.sort_logs()
    return groups


def latest_slices(groups: dict[tuple[str, str], FileGroup], replaced: dict[tuple[str, str], str]) -> list[Any]:
    """Latest non-empty-or-pending slice of each live (not replaced) file group."""
    out = []
    for key, fg in sorted(groups.items()):
        if key in replaced or not fg.slices:
            continue
        out.append(fg.slices[-1])
    return out
