"""A Hudi table's health: one read-only report (timeline, files, metadata table, lock, services
due) shared by the Airflow plugin, the maintenance-due sensor, the CLI and Asset events."""
