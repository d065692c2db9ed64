"""Layout optimization: row orders along space-filling curves (z-order, Hilbert) over several
columns, as Hudi's clustering lays out its files. Format-level and engine-free: both clustering
paths call it on a group's Arrow rows."""

from airflow_hoodie.table.layout.space_curves import (
    BUILD_METHODS,
    DIRECT,
    HILBERT,
    LINEAR,
    SAMPLE,
    STRATEGIES,
    Z_ORDER,
    LayoutSpec,
    curve_order,
    sort_by_layout,
)

__all__ = ["BUILD_METHODS", "DIRECT", "HILBERT", "LINEAR", "SAMPLE", "STRATEGIES", "Z_ORDER", "LayoutSpec",
           "curve_order", "sort_by_layout"]
