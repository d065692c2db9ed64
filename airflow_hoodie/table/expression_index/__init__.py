"""Expression indexes (Hudi 1.x ``CREATE INDEX ... USING column_stats|bloom_filters (func(col))``):
the functions Hudi applies to a column before indexing it, evaluated over Arrow with Spark SQL's
semantics, and the index definitions that name them. Part of the format layer: pure pyarrow."""
