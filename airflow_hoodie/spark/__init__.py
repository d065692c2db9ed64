"""spark layer of airflow-hoodie; see DESIGN.md."""


def read(spark, base_path, query_type="snapshot", **kwargs):  # noqa: ANN001 - thin re-export
    """``airflow_hoodie.spark.read(spark, base_path, query_type=...)`` -> DataFrame (see spark/read.py)."""
    from airflow_hoodie.spark.read import read as _read
    return _read(spark, base_path, query_type=query_type, **kwargs)
