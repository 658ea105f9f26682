"""Counts by kind over time as the geometry of a stacked bar chart, which the status page
draws in inline SVG (no chart library, nothing from the network)."""

from __future__ import annotations

from typing import Any

__all__ = ["bars"]

WIDTH, HEIGHT, GAP, AXIS = 720, 160, 2, 18


def bars(history: list[dict[str, Any]]) -> dict[str, Any]:
    """``history`` (``handlers.history``: oldest first, each ``month`` with its ``counts`` by
    kind) as rectangles, each with the kind it counts and a title for hovering."""
    periods = history or []
    tallest = max((sum(p["counts"].values()) for p in periods), default=0) or 1
    step = WIDTH / max(1, len(periods))
    rects, labels, kinds = [], [], []
    for i, period in enumerate(periods):
        x, base = i * step, HEIGHT - AXIS
        for kind, count in sorted(period["counts"].items()):
            if kind not in kinds:
                kinds.append(kind)
            height = (HEIGHT - AXIS - 4) * count / tallest
            base -= height
            rects.append(
                {
                    "x": round(x + GAP / 2, 1),
                    "y": round(base, 1),
                    "w": round(max(1.0, step - GAP), 1),
                    "h": round(height, 1),
                    "kind": kind,
                    "title": f"{period['month']}: {count} {kind}",
                }
            )
        if i % max(1, len(periods) // 8) == 0:
            labels.append({"x": round(x + step / 2, 1), "text": period["month"]})
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "rects": rects,
        "labels": labels,
        "kinds": kinds,
        "tallest": tallest if periods else 0,
    }
