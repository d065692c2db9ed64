"""Typed, immutable settings: each action's ``hoodie.*`` keys parsed once, at its entry point.

A job hands its :class:`~airflow_hoodie.config.HoodieConfig` to one ``from_config`` per action
(write, compaction, clustering, clean, archival, rollback, restore, savepoint) and passes the
resulting object down; nothing below the entry point reads a key again. So each key is
validated in one place, a value cannot differ between two readers of one trip, and the code
that uses a setting says by its type which settings it depends on. These modules import only
the key catalog, so the format layer, the actions and the jobs can all take them.
"""
