"""The Airflow operators of airflow-hoodie: one thin operator per ``spark_jobs/*.py`` script
(:mod:`airflow_hoodie.operators.hoodie`), all on one base that submits the job and reports its
result (:mod:`airflow_hoodie.operators.hoodie_base`)."""
