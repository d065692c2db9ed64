"""Plain stand-ins for file slices/groups, shaped like airflow_hoodie.table.file_group.file_group's."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.table.timeline.instant import Action, Instant, State


@dataclass
class F:
    path: str
    file_name: str
    size: int
    partition_path: str


@dataclass
class S:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: F | None
    log_files: list[F] = field(default_factory=list)


@dataclass
class G:
    partition_path: str
    file_id: str
    slices: list[S]


def ts(n: int) -> str:
    """Instant time n minutes after a fixed origin."""
    return f"20240101{n // 60:02d}{n % 60:02d}00000"


def inst(n: int, action: str = Action.COMMIT, state: State = State.COMPLETED) -> Instant:
    return Instant(ts(n), action, state)


def slice_(part: str, fid: str, n: int, base_size: int | None = 100, logs: tuple[int, ...] = ()) -> S:
    base = None
    if base_size is not None:
        name = f"{fid}_0-1-0_{ts(n)}.parquet"
        base = F(f"/t/{part}/{name}", name, base_size, part)
    lfs = [F(f"/t/{part}/.{fid}_{ts(n)}.log.{i + 1}_0-1-0", f".{fid}_{ts(n)}.log.{i + 1}_0-1-0", sz, part)
           for i, sz in enumerate(logs)]
    return S(part, fid, ts(n), base, lfs)


# ------------------------------------------------------------------ real tables
import os  # noqa: E402

import pyarrow as pa  # noqa: E402

import re  # noqa: E402

from tests.actions.table_versions import current_version, version_settings  # noqa: E402


def table_config(table_type: str = "MERGE_ON_READ", **extra: str) -> dict[str, str]:
    cfg = {"hoodie.table.name": "svc", "hoodie.datasource.write.table.type": table_type,
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts"}
    if table_type == "MERGE_ON_READ":
        # services need log files: without this, inserts beside updates merge the one small
        # group into a new base file each time (Hudi's MOR small-file rule), leaving no logs
        cfg["hoodie.parquet.small.file.limit"] = "0"
    cfg.update(version_settings())
    cfg.update(extra)
    return cfg


def batch(ids, ts_value: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:04d}" for i in ids], "p": [f"p{i % 2}" for i in ids],
                     "ts": [ts_value] * len(ids), "v": [ts_value * 10000 + i for i in ids]})


class Model:
    """The plain-Python truth a table's snapshot must equal."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def upsert(self, b: pa.Table) -> None:
        self.rows.update(zip(b.column("id").to_pylist(), b.column("v").to_pylist()))

    def table(self) -> dict[str, list]:
        keys = sorted(self.rows)
        return {"id": keys, "v": [self.rows[k] for k in keys]}


#: why a read skips the hudi-rs comparison on a version 6 table: hudi-rs 0.5 leaves out the log
#: files a write added to the new slice of a pending compaction (named by the compaction
#: instant), which Hudi's own readers merge (HUDI-3194); on 8/9 such logs are named by their
#: delta commit and hudi-rs reads them
HUDI_RS_V6_PENDING_COMPACTION_GAP = "v6 logs in a pending compaction's slice"


def snapshot(base: str, hudi_rs_gap: str | None = None, **kw) -> dict[str, list]:
    """The table's ``id``/``v`` as our reader returns them, after checking that hudi-rs (which
    lists a version 8/9 table through its metadata table) reads the very same rows.
    ``hudi_rs_gap`` names a known hudi-rs limitation skipping that check on version 6 only."""
    from airflow_hoodie.table.read import read_table
    from tests.table.normalize import hudi_rs_rows, normalize_table

    t = read_table(base, **kw)
    if hudi_rs_gap is None or current_version() >= 8:
        assert normalize_table(t) == hudi_rs_rows(base, **kw), f"hudi-rs reads {base} ({kw}) differently"
    if t.num_rows == 0:
        return {"id": [], "v": []}
    return t.select(["id", "v"]).sort_by("id").to_pydict()


def write(base: str, b: pa.Table, cfg: dict[str, str], operation: str = "upsert") -> str:
    from airflow_hoodie.actions.write import write_arrow

    return write_arrow(base, b, operation, cfg).instant


def data_files(base: str) -> list[str]:
    out = []
    for root, _dirs, files in os.walk(base):
        if ".hoodie" in os.path.relpath(root, base).split(os.sep):
            continue
        out += [os.path.relpath(os.path.join(root, f), base) for f in files if not f.startswith(".hoodie_partition")]
    return sorted(out)


def meta_files(base) -> list[str]:
    """Every file under ``.hoodie`` (timeline of either layout, LSM history, metadata table,
    heartbeats ...), relative to it: what "the table was left unchanged" compares."""
    meta = os.path.join(str(base), ".hoodie")
    return sorted(os.path.relpath(os.path.join(root, f), meta) for root, _d, files in os.walk(meta) for f in files)


#: a layout-2 completed instant file: ``<requested>_<completion>.<action>``
_LAYOUT_2_COMPLETED = re.compile(r"^(\d{17})_(\d{17})(\.[a-z]+)$")


def timeline_dir(base: str) -> str:
    """The active timeline folder of the version under test: ``.hoodie`` on version 6,
    ``.hoodie/timeline`` on 8 and 9 (Hudi 1.x, timeline layout 2)."""
    meta = os.path.join(base, ".hoodie")
    return os.path.join(meta, "timeline") if current_version() >= 8 else meta


def timeline_files(base: str) -> list[str]:
    """The active timeline's instant files, named ``<time>.<action>[.<state>]`` on every version.

    On version 8/9 they are read from ``.hoodie/timeline`` (and ``.hoodie`` itself must hold
    none), each completed file must be named ``<requested>_<completion>.<action>`` with a
    completion time not before its requested time, and that completion time is then dropped,
    so a test names an instant the same way on every version.
    """
    names = sorted(f for f in os.listdir(timeline_dir(base)) if f[0].isdigit())
    if current_version() < 8:
        return names
    stray = [f for f in os.listdir(os.path.join(base, ".hoodie")) if f[0].isdigit()]
    assert not stray, f"instant files outside .hoodie/timeline on a layout-2 table: {stray}"
    out = []
    for name in names:
        time_part, _, rest = name.partition(".")
        if "_" in time_part:
            m = _LAYOUT_2_COMPLETED.match(name)
            assert m and m.group(2) >= m.group(1), f"malformed layout-2 completed instant file {name}"
            name = m.group(1) + m.group(3)
        out.append(name)
    return sorted(out)


def completed_file(base: str, ts: str, action: str) -> str:
    """The path of instant ``ts``'s completed ``action`` file in the version under test's
    layout (``.hoodie/<ts>.<action>`` on 6, ``.hoodie/timeline/<ts>_<completion>.<action>`` on
    8/9); fails the test when there is not exactly one."""
    folder = timeline_dir(base)
    if current_version() < 8:
        found = [f for f in os.listdir(folder) if f == f"{ts}.{action}"]
    else:
        found = [f for f in os.listdir(folder) if re.fullmatch(rf"{ts}_\d{{17}}\.{action}", f)]
    assert len(found) == 1, f"expected one completed {ts}.{action} in {folder}, found {found}"
    return os.path.join(folder, found[0])


def clustering_action() -> str:
    """The action of a pending clustering on the version under test: Hudi 1.x (8/9) writes
    ``<ts>.clustering.requested``/``.inflight``, completing as a replacecommit; version 6 a
    pending replacecommit."""
    return "clustering" if current_version() >= 8 else "replacecommit"


def load(base: str):
    from airflow_hoodie.table.hoodie_table import HoodieTable

    return HoodieTable.load(base)


def history_files(base: str) -> dict[str, list[str]]:
    """A version 8/9 table's LSM history (``.hoodie/timeline/history``): the parquet files the
    latest manifest lists (checked against ``_version_``), and every file in the folder."""
    import json

    folder = os.path.join(base, ".hoodie", "timeline", "history")
    names = sorted(os.listdir(folder))
    version = open(os.path.join(folder, "_version_")).read().strip()
    manifest = json.load(open(os.path.join(folder, f"manifest_{version}")))
    listed = sorted(e["fileName"] for e in manifest["files"])
    for e in manifest["files"]:
        assert os.path.getsize(os.path.join(folder, e["fileName"])) == e["fileLen"], e
    return {"listed": listed, "all": names, "version": [version]}


def history_rows(base: str) -> list[dict]:
    """The archived instants as the listed history parquet files hold them (read with pyarrow,
    not our timeline reader)."""
    import pyarrow.parquet as pq

    folder = os.path.join(base, ".hoodie", "timeline", "history")
    rows: list[dict] = []
    for name in history_files(base)["listed"]:
        rows += pq.read_table(os.path.join(folder, name)).to_pylist()
    return sorted(rows, key=lambda r: r["instantTime"])


def completion_times(base: str) -> dict[str, str]:
    """Requested -> completion time of the completed instants in a layout-2 active timeline."""
    out = {}
    for name in os.listdir(timeline_dir(base)):
        m = _LAYOUT_2_COMPLETED.match(name)
        if m:
            out[m.group(1)] = m.group(2)
    return out
