"""Which path a Spark write's batch takes when the job does not say: the rule, from measurements.

``benchmarks/crossover.py`` upserts 300k, 1M, 2M and 4M records (20% updates) into a 2M-record
COPY_ON_WRITE table read from parquet, down each path in turn, on ``local[2]`` (this project's
2-core machine). In every run the driver path won, and its file work ran fastest in the
driver's own process:

===========  ===================  ============================  ==============  =============
records      Spark's estimate     driver, file work in process  driver, tasks   DataFrame
===========  ===================  ============================  ==============  =============
300,000      7 MB                 5.6 s                         8.4 s           17.7 s
1,000,000    24 MB                9.3 s                         18.8 s          25.3 s
2,000,000    43 MB                18.4 s                        26.1 s          52.8 s
4,000,000    81 MB                (not run)                     45.2 s          91.3 s
===========  ===================  ============================  ==============  =============

(load 8-11 from other work on the machine; the order of the paths held in every run.) With
the executors on the driver's own machine, Spark tasks share the same cores and add only a
serialization round trip, and the DataFrame path adds shuffles on top. So the crossover lies
past 81 MB; what bounds the driver path there is memory: the driver holds the batch, and its
peak RSS grew about 0.3 GB per million records (0.75 GB at 300k, 1.25 GB at 2M, 1.83 GB at 4M).

The rule:

* **Spark on the driver's machine** (a ``local`` master): the driver path up to 64 MB of
  Spark's estimate (about 2.7M such records, about 1.5 GB at peak), all its file work in the
  driver's process.
* **A cluster**: the DataFrame path's tasks spread over executors the driver does not have,
  so the crossover moves lower. It was not measured on a multi-node cluster here; the
  earlier defaults stay (32 MB, and file work on Spark tasks past 128 MB of files). Run
  ``benchmarks/crossover.py --master <your master>`` to place it and set the keys.

Either key, set by the job, wins over the rule.
"""

from __future__ import annotations

from typing import Any

from airflow_hoodie.actions.write_settings import WriteRequest

MB = 1024 * 1024
#: (batch bytes by Spark's estimate, bytes of files a driver-path step may read in process)
LOCAL_LIMITS = (64 * MB, 1 << 62)
CLUSTER_LIMITS = (32 * MB, 128 * MB)


def runs_locally(spark: Any) -> bool:
    """Whether Spark's executors are the driver's own machine (a ``local`` master)."""
    return str(spark.sparkContext.master).startswith("local")


def driver_limits(spark: Any, request: WriteRequest) -> tuple[int, int]:
    """(``hoodie.airflow.write.driver.batch.max.bytes``, ``...driver.files.max.bytes``) for
    this write: the job's values where it set them, else the rule above."""
    batch, files = LOCAL_LIMITS if runs_locally(spark) else CLUSTER_LIMITS
    return (batch if request.driver_batch_max_bytes is None else request.driver_batch_max_bytes,
            files if request.driver_files_max_bytes is None else request.driver_files_max_bytes)
