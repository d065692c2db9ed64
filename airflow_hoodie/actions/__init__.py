"""The actions layer (see DESIGN.md): one module per timeline action (write, compaction,
clustering, clean, archive, rollback, restore, savepoint), each planned then executed
through an executor (local, or Spark's), and completed through the one commit path, which
keeps the metadata table and the table's concurrency control, for table versions 6, 8 and 9."""
