"""The Airflow sensors of airflow-hoodie: wait for an instant, a pending table service or due
maintenance by reading the table's timeline (never Spark), deferring to the triggerer."""
