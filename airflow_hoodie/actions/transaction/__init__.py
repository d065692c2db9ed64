"""Hudi's concurrency control: heartbeats, table locks, optimistic conflict checks."""
