"""triggers layer of airflow-hoodie; see DESIGN.md."""
