"""spark layer of airflow-hoodie; see DESIGN.md."""
