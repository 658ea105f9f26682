"""Nodes as the rows the ``nodes`` table stores: redacted, hashed, their identifier words split.

Pure: no database here. ``upsert_nodes`` (nodes.py) makes the rows and writes them; a first
sync's history walk makes them in a second process (walker.py) and the sync only writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from ..models import Node
from ..redact import redact_lines, value_strings, with_strings
from ..retrieval.cjk import has_cjk
from ..retrieval.names import name_parts

__all__ = ["RECORDED", "Row", "node_rows", "recorded_at"]

# id, project_id, kind, source, ref, grp, title, body, paths, ts, created_at, signal,
# provenance, content_hash, meta, cjk, names: the columns of store/nodes.py's upsert, in order.
Row = tuple[Any, ...]
RECORDED = 10  # created_at's place in a row: the record time
Fields = tuple[str, str, str | None, list[str], str, str]


def recorded_at(rows: list[Row], now: int) -> list[Row]:
    """``rows`` with ``now`` their record time (rows made before the sync said its time)."""
    return [(*row[:RECORDED], now, *row[RECORDED + 1 :]) for row in rows]


def node_rows(nodes: Sequence[Node], now: int) -> tuple[list[Row], list[tuple[str, str]]]:
    """The rows of ``nodes`` (``now`` is their record time) and their (node id, path) pairs."""
    rows: list[Row] = []
    files: list[tuple[str, str]] = []
    for n, (title, ref, grp, paths, meta, content_hash) in zip(
        nodes, _redacted(nodes), strict=True
    ):
        rows.append(
            (
                n.id,  # from the ref as collected: a hash, which shows nothing of a secret in it
                n.project_id,
                n.kind,
                n.source,
                ref,
                grp,
                title,
                n.body,
                "\n".join(paths),
                n.ts,
                now,
                n.signal,
                n.provenance,
                content_hash,
                meta,
                has_cjk(title) or has_cjk(n.body),  # which nodes the trigram index holds
                name_parts(n.kind, title, n.body),  # the words inside its identifiers
            )
        )
        files.extend((n.id, path) for path in paths)
    return rows, files


def _redacted(nodes: Sequence[Node]) -> list[Fields]:
    """Each node's short fields as they may reach disk: title, ref, group, paths, meta, and the
    content hash of the node they make.

    Collectors redact the bodies they build (before cutting them to size); these fields come
    from names (a file called ``ghp_<36 chars>.txt``, a branch, a heading) and are redacted here,
    where every node passes, so no collector can forget one. All the nodes' fields go through
    the table in one call, each distinct string once: paths repeat from node to node. Meta's
    values are redacted, not its keys, which are ours (``author``, ``changes``). The hash is the
    redacted node's, as scrub-secrets computes it, so a scrubbed node and its next sync agree.
    """
    per_node = [
        (n.title, n.ref, n.grp or "", *n.files, *value_strings(n.meta, keys=False)) for n in nodes
    ]
    distinct = list(dict.fromkeys(text for fields in per_node for text in fields))
    cleaned = redact_lines(distinct)
    if cleaned is distinct:
        return [(n.title, n.ref, n.grp, n.files, n.meta_json, n.content_hash) for n in nodes]
    clean_of = {text: new for text, new in zip(distinct, cleaned, strict=True) if text != new}
    out: list[Fields] = []
    for n, fields in zip(nodes, per_node, strict=True):
        if not any(text in clean_of for text in fields):
            out.append((n.title, n.ref, n.grp, n.files, n.meta_json, n.content_hash))
            continue
        title, ref, grp, *rest = (clean_of.get(text, text) for text in fields)
        paths, values = rest[: len(n.files)], rest[len(n.files) :]
        clean = replace(  # the ref stays: the id is derived from it, and is a hash already
            n,
            title=title,
            grp=grp if n.grp is not None else None,
            files=paths,
            meta=cast(dict[str, Any], with_strings(n.meta, iter(values), keys=False)),
        )
        out.append((clean.title, ref, clean.grp, clean.files, clean.meta_json, clean.content_hash))
    return out
