"""A table's files as its health report counts them: file groups, log files per slice, small
base files, bytes, a size histogram and per-partition figures.

Everything comes from the file system view (the metadata table's listing when the table
has one, else storage) and from the write stats of the commits on the active timeline:
nothing is estimated. Rows are the records each latest base file was written with; a base
file whose commit is archived has no write stat left here and is counted in
``rows_unknown_files`` instead of being guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.timeline.timeline import Timeline

#: upper bounds of the histogram's buckets, in bytes (the last one is open)
HISTOGRAM_BOUNDS = (1 << 20, 8 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30)
TOP_PARTITIONS = 20


@dataclass
class _Partition:
    files: int = 0
    bytes: int = 0
    rows: int = 0


@dataclass
class FileFigures:
    file_groups: int = 0
    log_files: int = 0
    max_log_files_per_slice: int = 0
    small_file_groups: int = 0
    total_bytes: int = 0
    log_bytes: int = 0
    base_bytes: list[int] = field(default_factory=list)
    partitions: dict[str, _Partition] = field(default_factory=dict)
    rows_unknown_files: int = 0

    def as_dict(self) -> dict[str, Any]:
        top = sorted(self.partitions.items(), key=lambda kv: (-kv[1].bytes, kv[0]))[:TOP_PARTITIONS]
        sizes = [p.bytes for p in self.partitions.values()]
        mean = sum(sizes) / len(sizes) if sizes else 0
        return {
            "file_groups": self.file_groups,
            "log_files": self.log_files,
            "max_log_files_per_slice": self.max_log_files_per_slice,
            "small_file_groups": self.small_file_groups,
            "total_bytes": self.total_bytes,
            "log_bytes": self.log_bytes,
            "file_size_histogram": histogram(self.base_bytes),
            "partitions": {
                "count": len(self.partitions),
                "top": [{"partition": name, "files": p.files, "bytes": p.bytes, "rows": p.rows} for name, p in top],
                # the largest partition against the mean: 1.0 is even, 10 means one holds ten shares
                "skew_ratio": round(max(sizes) / mean, 3) if mean else None,
                "rows_unknown_files": self.rows_unknown_files,
            },
        }


def histogram(sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Base files per size bucket; ``le_bytes`` None is the open last bucket."""
    counts = [0] * (len(HISTOGRAM_BOUNDS) + 1)
    for size in sizes:
        counts[next((i for i, b in enumerate(HISTOGRAM_BOUNDS) if size <= b), len(HISTOGRAM_BOUNDS))] += 1
    return [{"le_bytes": b, "count": c} for b, c in zip([*HISTOGRAM_BOUNDS, None], counts)]


def written_rows(timeline: Timeline) -> dict[str, int]:
    """Base file name -> records written into it, from the active timeline's write stats."""
    rows: dict[str, int] = {}
    for instant in timeline.completed_commits().instants:
        for stat in timeline.commit_metadata(instant).write_stats:
            name = (stat.path or "").rsplit("/", 1)[-1]
            if name.endswith(".parquet") or name.endswith(".orc") or name.endswith(".hfile"):
                rows[name] = int(stat.num_writes or 0)
    return rows


def file_figures(slices: Sequence[FileSlice], small_file_limit: int, rows: dict[str, int]) -> FileFigures:
    out = FileFigures()
    for s in slices:
        part = out.partitions.setdefault(s.partition_path, _Partition())
        out.file_groups += 1
        out.log_files += len(s.log_files)
        out.max_log_files_per_slice = max(out.max_log_files_per_slice, len(s.log_files))
        size = sum(lf.size or 0 for lf in s.log_files)
        out.log_bytes += size
        if s.base_file is not None:
            size += s.base_file.size
            out.base_bytes.append(s.base_file.size)
            if s.base_file.size < small_file_limit:
                out.small_file_groups += 1
            if s.base_file.file_name in rows:
                part.rows += rows[s.base_file.file_name]
            else:
                out.rows_unknown_files += 1
        part.files += 1 + len(s.log_files) if s.base_file is not None else len(s.log_files)
        part.bytes += size
        out.total_bytes += size
    return out
