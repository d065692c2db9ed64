"""Where a table's timeline lives on storage: ``.hoodie``, and on timeline layout 2
(table versions 8 and 9, Hudi 1.x) its ``timeline`` folder.

Kept apart from the reader (:mod:`timeline`) and the writer (:mod:`timeline_writer`), which
both resolve instant files from here.
"""

from __future__ import annotations

from airflow_hoodie.table.storage.storage import Storage

METAFOLDER = ".hoodie"


def meta_path(base_path: str) -> str:
    """The table's ``.hoodie`` folder (properties, timeline, metadata table, ...), every version."""
    return Storage.join(base_path, METAFOLDER)


#: timeline layout 2 (table version 8+, Hudi 1.x) keeps the active timeline here
LAYOUT_2_FOLDER = "timeline"


def timeline_path(storage: Storage, base_path: str) -> str:
    """Where the instant files of the table live: ``.hoodie/timeline`` on Hudi 1.x
    tables (timeline layout 2), ``.hoodie`` before."""
    layout2 = Storage.join(meta_path(base_path), LAYOUT_2_FOLDER)
    return layout2 if storage.exists(layout2) else meta_path(base_path)
