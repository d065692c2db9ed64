"""Hudi's metadata table (``.hoodie/metadata``) on table versions 6, 8 and 9: its files listing,
indexes (record index, column and partition stats, bloom filters) and HFiles, as reads use
them and as our actions keep them true when they change a table."""
