"""Everything that writes a table's metadata table (``.hoodie/metadata``), for table versions
6, 8 and 9: building it (:mod:`files_bootstrap`, the record index and statistics partitions),
its delta commit per data instant (:mod:`metadata_writer`: ``files``, ``record_index``,
``column_stats``, ``partition_stats``, ``bloom_filters``), its own compaction, clean and
archival (:mod:`metadata_compaction`), which partitions a change keeps or drops
(:mod:`maintenance`) and dropping it (:mod:`removal`). Keeping the metadata table true is a
service of the data table's actions, so it lives in this layer; its readers and encodings
stay in ``airflow_hoodie.table.metadata_table``. Settings come parsed once, as
:class:`settings.MetadataTableSettings`.
"""
