"""The one exception hierarchy of airflow-hoodie.

Every error a user can trigger derives from :class:`HoodieError`, so an Airflow task, a
job script or the CLI can catch one type and print a message that says what went wrong
and what to do about it. Messages are written for the person running the pipeline, not
for the person debugging the library.
"""

from __future__ import annotations


class HoodieError(Exception):
    """Base of every error raised on purpose by airflow-hoodie."""


class HoodieConfigError(HoodieError):
    """A ``hoodie.*`` setting is unknown, missing, or has a value we cannot use."""


class HoodieTableNotFoundError(HoodieError):
    """The path holds no Hudi table (no ``.hoodie/hoodie.properties``)."""


class HoodieTableExistsError(HoodieError):
    """Creating a table where one already exists with incompatible settings."""


class HoodieCorruptedDataError(HoodieError):
    """A file of the table (log, plan, metadata, parquet) cannot be decoded."""


class HoodieTimelineError(HoodieError):
    """An instant is missing, already exists, or is moved through an illegal state."""


class HoodieIOError(HoodieError):
    """Storage refused an operation (missing file, permission, network)."""


class HoodieSchemaError(HoodieError):
    """An incoming batch's schema cannot be reconciled with the table's."""


class HoodieKeyError(HoodieError):
    """A record's key, partition path or ordering value is missing, null or unusable."""


class HoodieWriteConflictError(HoodieError):
    """A write or service touched file groups that a concurrent instant changed first."""


class HoodieLockError(HoodieError):
    """The table's lock could not be taken or released (lock provider down, timeout)."""


class HoodieConcurrentWriterError(HoodieError):
    """Another writer holds a live pending instant on a table in single-writer mode."""


class HoodieNotSupportedError(HoodieError):
    """A valid Hudi feature this implementation deliberately does not handle."""


class HoodieJobError(HoodieError):
    """A spark-submit job of ours failed; the message carries the job's own error."""


class HoodieMetadataDamagedError(HoodieCorruptedDataError):
    """A metadata-table partition holds a corrupt or truncated block: the partition cannot
    answer for this job (a key or file it held would look absent)."""

    def __init__(self, message: str, path: str = "", partition: str = "", damaged: tuple = ()) -> None:
        super().__init__(message)
        self.path = path
        self.partition = partition
        #: the damaged blocks (airflow_hoodie.table.log.log_reader.DamagedBlock), to word it anew
        self.damaged = damaged


class HoodieWaitFutileError(HoodieError):
    """A sensor's wait cannot end: no table at its path, or the instant it waits for will not
    be produced (the latest planning run declined it). Raised instead of waiting out the
    sensor's timeout."""
