"""The Spark side of airflow-hoodie (see DESIGN.md): everything that needs a SparkSession. The
write flow's Spark engines and bulk_insert's row writer, the executor that spreads planned
operations over Spark tasks, the SparkSession and the jobs' shared plumbing, and reading a
table into a DataFrame."""


def read(spark, base_path, query_type="snapshot", **kwargs):  # noqa: ANN001 - thin re-export
    """``airflow_hoodie.spark.read(spark, base_path, query_type=...)`` -> DataFrame (see spark/read.py)."""
    from airflow_hoodie.spark.read import read as _read
    return _read(spark, base_path, query_type=query_type, **kwargs)
