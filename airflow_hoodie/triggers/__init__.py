"""The Airflow triggers of airflow-hoodie: timeline conditions and due maintenance evaluated in
the triggerer from the table's timeline, and deferred cluster-mode writes (the driver's state
and the instant it commits)."""
