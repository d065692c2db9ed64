"""The Airflow plugin of airflow-hoodie: table health in Airflow's api-server and UI."""
