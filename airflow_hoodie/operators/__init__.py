"""operators layer of airflow-hoodie; see DESIGN.md."""
