"""Hudi's binary log format: blocks, the writer and the reader."""
