"""Hudi's bloom filters, byte-compatible with its Java implementation."""
