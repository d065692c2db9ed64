"""The Airflow hooks of airflow-hoodie: the ``hoodie`` connection (:class:`HoodieHook`), the
spark-submit of one job through the apache-spark provider, the AWS connection's credentials,
and the checks a write or a table service gets before any Spark starts."""
