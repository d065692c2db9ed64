"""Hudi's metadata table (``.hoodie/metadata``) as the format layer knows it: its readers (files listing,
record index lookups, statistics), encodings (HFile, HoodieMetadataRecord, index keys) and layouts, for
table versions 6, 8 and 9. What writes it lives in ``airflow_hoodie.actions.metadata_table``."""
