"""The spark-submit job scripts, installed as ``airflow_hoodie.spark_jobs``.

Each module is run as a script by ``spark-submit`` (never imported by the provider);
the hook finds this directory from ``airflow_hoodie.__file__``."""
