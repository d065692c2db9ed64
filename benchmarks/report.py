"""Where every benchmark leaves its figures: a JSON file and a PNG bar chart of the
ratios against the peer engine, under ``benchmarks/out/`` (next to this file)."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Iterable

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def write_report(name: str, figures: dict[str, Any], rows: list[tuple[str, float, float, str]]) -> str:
    """Save ``figures`` as ``<name>.json`` and chart ``rows`` = (work, ours_s, peer_s, peer)
    as ``<name>.png``; returns the JSON path."""
    import matplotlib  # noqa: PLC0415 - optional, only for the chart

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    os.makedirs(OUT_DIR, exist_ok=True)
    table = [{"work": w, "ours_s": round(o, 3), "peer_s": round(p, 3), "peer": peer,
              "ratio": round(o / p, 2)} for w, o, p, peer in rows]
    path = os.path.join(OUT_DIR, f"{name}.json")
    with open(path, "w") as fh:
        json.dump({**figures, "table": table}, fh, indent=1)
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.55 * len(rows)))
    labels = [f"{r['work']}\nvs {r['peer']}" for r in table]
    ys = range(len(table))
    ax.barh([y + 0.2 for y in ys], [r["ours_s"] for r in table], 0.4, label="airflow-hoodie")
    ax.barh([y - 0.2 for y in ys], [r["peer_s"] for r in table], 0.4, label="peer")
    for y, r in zip(ys, table):
        ax.text(max(r["ours_s"], r["peer_s"]), y, f"  {r['ratio']}x", va="center")
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.set_xlabel("seconds (lower is better)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, f"{name}.png"), dpi=110)
    plt.close(fig)
    return path


def print_table(rows: list[tuple[str, float, float, str]]) -> None:
    print("| work | us | peer | ratio |\n|---|---|---|---|")
    for w, o, p, peer in rows:
        print(f"| {w} | {o:.2f} s | {peer} {p:.2f} s | {o / p:.2f}x |")


def median_run(fn: Callable[[Any], Any], inputs: Iterable[Any]) -> tuple[float, Any]:
    """Median seconds of ``fn`` over ``inputs`` and the result of that run: this machine
    is shared, and single runs varied by half."""
    runs = []
    for item in inputs:
        t0 = time.perf_counter()
        result = fn(item)
        runs.append((time.perf_counter() - t0, result))
    runs.sort(key=lambda r: r[0])
    return runs[len(runs) // 2]
