"""Bounded soak of the table services (see service_loop.py)."""
