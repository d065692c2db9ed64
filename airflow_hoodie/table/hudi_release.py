"""What each Hudi release line writes into a table of its version: the one place a table
version number is compared.

A table's version says which Hudi release wrote it, and that release decides the form of
almost everything a writer leaves behind: commit files, log-file names, metadata-table
records, index versions, the keys of a new ``hoodie.properties``. Each release line is one
:class:`HudiRelease` value naming those choices, and :func:`release_of` maps a version number
to its line. Code that needs one of them asks the table's
:class:`~airflow_hoodie.table.table_format.TableFormat` (or, holding only a version number
from a write's settings, ``TableFormat.for_version``), never the number itself: a new
version then changes this table, not the branches of every writer.

Kept apart from ``table_format`` so the file layer (``LogFileLayout``) can ask it without
importing the timeline and serializers the format module needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.table import properties as tp
from airflow_hoodie.table.timeline.instant import Action


@dataclass(frozen=True)
class HudiRelease:
    """The table-format choices of one Hudi release line (see module doc)."""

    #: the release line, for messages and reprs
    name: str
    #: the timeline layout its tables use when hoodie.properties names none
    timeline_layout: int
    #: completed commits (and a write's inflight workload profile) are Avro containers in
    #: Hudi 1.x's ``CommitMetadataSerDeV2`` form; before, Jackson JSON
    commits_in_avro: bool
    #: the action of a pending clustering: its own on 1.x (completing as a replacecommit);
    #: before, a pending replacecommit
    clustering_action: str
    #: a log file is named by the delta commit that writes it (1.x), not by its slice's base
    #: instant; see :mod:`~airflow_hoodie.table.file_group.log_file_layout`
    names_logs_by_write_instant: bool
    #: the schema file (beside ``metadata_table/metadata_record.py``) of its metadata records:
    #: 1.x added fields (secondary index, typed column-stats values) its readers expect
    metadata_record_schema: str
    #: the column-stats / partition-stats index version it writes when the table's index
    #: definition names none
    stats_index_version: str
    #: the secondary-index version a new index definition gets (HoodieIndexVersion's current
    #: one): V2 from 1.1 hashes a key's file group by its escaped value alone, V1 by the whole
    #: key (:mod:`~airflow_hoodie.table.metadata_table.secondary_index`); 0.x has none
    secondary_index_version: str | None
    #: column-stats records carry ``isTightBound`` and ``valueType`` (1.x)
    typed_column_stats: bool
    #: column stats cover Hudi's indexed meta fields first, up to
    #: ``hoodie.metadata.index.column.stats.max.columns.to.index`` columns (1.x); 0.14 had no cap
    column_stats_cover_meta_fields: bool
    #: the columns an index covers are recorded in the table's index definitions file (1.x)
    records_index_definitions: bool
    #: the metadata table may keep a ``partition_stats`` partition (1.x)
    has_partition_stats: bool
    #: metadata-table partitions are initialized as 1.x does it: its hoodie.properties,
    #: instants ``00000000000000000``, ``…001``, …, and an empty delete block opening every
    #: file group; before, Hudi 0.14's ``…010`` instants and properties
    initializes_metadata_as_1x: bool
    #: a new table's hoodie.properties are the ones Hudi 1.x writes (key generator type,
    #: timeline and history paths, merge mode spelled out); before, 0.14's defaults
    table_properties_1x: bool
    #: the hoodie.properties key of a new table's ordering fields
    ordering_fields_key: str
    #: a new table names its table format (``hoodie.table.format=native``, Hudi 1.1)
    declares_table_format: bool
    #: a new table names the payload class and merge strategy id of its merge mode as well as
    #: the mode (Hudi 1.0); 1.1 names only the mode, plus what a payload class asked for
    names_merge_payload_and_strategy: bool
    #: a write without ordering fields orders by the precombine field's default ``ts`` (0.14);
    #: on 1.x it orders by commit time
    precombine_defaults_to_ts: bool
    #: complex keys are always encoded ``field:value``, whatever
    #: ``hoodie.datasource.write.complex.keygen.new.encoding`` says (Hudi 1.1,
    #: KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen)
    locks_complex_key_encoding: bool
    #: what ends the name of a CDC log file after its write token: ``-cdc`` on 0.14/0.15
    #: (HoodieCDCUtils.CDC_LOGFILE_SUFFIX), ``.cdc`` on 1.x
    cdc_log_suffix: str = ".cdc"
    #: how the bucket index takes hash values out of a complex record key: ``"split"`` (0.x:
    #: split on ``,`` then on the first ``:``) or ``"scan"`` (HUDI-8403, apache/hudi#12120, merged in
    #: October 2024, taken here as the parser of the 1.x lines, table versions 8 and 9: values may
    #: hold ``,`` and ``:``; a key with no ``,`` is one value)
    bucket_hash_key_parser: str = "split"


#: Hudi 0.x: table version 6 (0.14/0.15), which we write, and 5 (0.12/0.13), which we read
RELEASE_0_X = HudiRelease(
    name="0.x", timeline_layout=1, commits_in_avro=False, clustering_action=Action.REPLACE_COMMIT,
    names_logs_by_write_instant=False, metadata_record_schema="HoodieMetadataRecord.avsc", stats_index_version="V1",
    secondary_index_version=None, typed_column_stats=False, column_stats_cover_meta_fields=False,
    records_index_definitions=False,
    has_partition_stats=False, initializes_metadata_as_1x=False, table_properties_1x=False,
    ordering_fields_key=tp.PRECOMBINE_FIELD, declares_table_format=False, names_merge_payload_and_strategy=False,
    precombine_defaults_to_ts=True, locks_complex_key_encoding=False, cdc_log_suffix="-cdc")
#: Hudi 1.0: table version 8
RELEASE_1_0 = HudiRelease(
    name="1.0", timeline_layout=2, commits_in_avro=True, clustering_action=Action.CLUSTERING,
    names_logs_by_write_instant=True, metadata_record_schema="HoodieMetadataRecord_1x.avsc", stats_index_version="V1",
    secondary_index_version="V1", typed_column_stats=True, column_stats_cover_meta_fields=True,
    records_index_definitions=True,
    has_partition_stats=True, initializes_metadata_as_1x=True, table_properties_1x=True,
    ordering_fields_key=tp.PRECOMBINE_FIELD, declares_table_format=False, names_merge_payload_and_strategy=True,
    precombine_defaults_to_ts=False, locks_complex_key_encoding=False,
    bucket_hash_key_parser="scan")
#: Hudi 1.1: table version 9
RELEASE_1_1 = HudiRelease(
    name="1.1", timeline_layout=2, commits_in_avro=True, clustering_action=Action.CLUSTERING,
    names_logs_by_write_instant=True, metadata_record_schema="HoodieMetadataRecord_1x.avsc", stats_index_version="V2",
    secondary_index_version="V2", typed_column_stats=True, column_stats_cover_meta_fields=True,
    records_index_definitions=True,
    has_partition_stats=True, initializes_metadata_as_1x=True, table_properties_1x=True,
    ordering_fields_key=tp.ORDERING_FIELDS, declares_table_format=True, names_merge_payload_and_strategy=False,
    precombine_defaults_to_ts=False, locks_complex_key_encoding=True,
    bucket_hash_key_parser="scan")

#: the first table version of each 1.x release line
_FIRST_VERSIONS = ((9, RELEASE_1_1), (8, RELEASE_1_0))


def release_of(table_version: int) -> HudiRelease:
    """The release line whose forms a table of ``table_version`` carries. A version we do not
    know is read as the line it follows (7 as 0.x, 10 as 1.1): whether it may be written at
    all is the format's :meth:`~airflow_hoodie.table.table_format.TableFormat.check_writable`."""
    for first, release in _FIRST_VERSIONS:
        if table_version >= first:
            return release
    return RELEASE_0_X


__all__ = ["RELEASE_0_X", "RELEASE_1_0", "RELEASE_1_1", "HudiRelease", "release_of"]
