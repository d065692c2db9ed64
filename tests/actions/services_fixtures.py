"""Plain stand-ins for file slices/groups, shaped like airflow_hoodie.table.file_group's."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.table.instant import Action, Instant, State


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
