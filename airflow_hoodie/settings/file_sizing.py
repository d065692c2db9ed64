"""How a write sizes file groups, as Hudi's UpsertPartitioner does: which files are small,
how many bytes a record takes, how many inserts go to one new file group. Parsed once per write."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import (
    LOG_TO_PARQUET_RATIO,
    PARQUET_MAX_FILE_SIZE,
    PARQUET_SMALL_FILE_LIMIT,
    SMALL_FILE_GROUP_CANDIDATES_LIMIT,
)


@dataclass(frozen=True)
class SizingSettings:
    """How Hudi's UpsertPartitioner sizes file groups: small files, record size, insert splits."""

    small_file_limit: int = 104857600
    max_file_size: int = 125829120
    record_size_estimate: int = 1024
    #: a commit counts for the record size once it wrote more than this many bytes
    record_size_threshold_bytes: float = 104857600.0
    log_to_parquet_ratio: float = 0.35
    small_file_group_candidates_limit: int = 1
    insert_auto_split: bool = True
    insert_split_size: int = 500000

    @classmethod
    def from_config(cls, config: HoodieConfig) -> SizingSettings:
        small = config.get_int(PARQUET_SMALL_FILE_LIMIT)
        return cls(small, config.get_int(PARQUET_MAX_FILE_SIZE), config.get_int("hoodie.copyonwrite.record.size.estimate"),
                   config.get_float("hoodie.record.size.estimation.threshold") * small,
                   config.get_float(LOG_TO_PARQUET_RATIO), config.get_int(SMALL_FILE_GROUP_CANDIDATES_LIMIT),
                   config.get_bool("hoodie.copyonwrite.insert.auto.split"),
                   config.get_int("hoodie.copyonwrite.insert.split.size"))
