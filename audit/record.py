"""The audit record: its actions and the caps that keep one hostile request small.

One JSON object per touched request, written by the addon (`urlsan.addon`) and by
``urlsan audit``, read by ``urlsan report``.  Its fields (README, The audit log):
``ts``, ``client``, ``method``, ``host``, ``action``, ``before``, ``after``, ``profile``,
``rules``, ``edits`` and ``findings``, and ``edits_truncated`` / ``truncated`` when a cap cut it.

Caps, so that one hostile request can neither write megabytes nor stall the proxy: a record holds
the first `MAX_EDITS` (100) edits, and ``"edits_truncated": <number dropped>`` when there were
more; a string longer than `MAX_TEXT` (8192 characters) is cut to that length (after redaction,
so a secret is never half-masked), and the record, edit or finding that held it gets
``"truncated": true``.
"""

from __future__ import annotations

from typing import Any

MAX_EDITS = 100  # edits kept per record
MAX_TEXT = 8192  # characters kept per string

# What the proxy did with a request, in the order reports list them.
ACTIONS = ("rewritten", "audited", "rejected", "redirected", "skipped-signed", "unchanged")
# The actions whose record shows a target that was (or, audited, would have been) changed.
CHANGING = frozenset({"rewritten", "audited", "redirected"})


def limit_edits(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with at most `MAX_EDITS` edits, counting the others in ``edits_truncated``."""
    edits = record.get("edits")
    if not isinstance(edits, list) or len(edits) <= MAX_EDITS:
        return record
    out = dict(record)
    out["edits"] = edits[:MAX_EDITS]
    out["edits_truncated"] = int(record.get("edits_truncated") or 0) + len(edits) - MAX_EDITS
    return out


def _cut(obj: dict[str, Any]) -> dict[str, Any]:
    long = [k for k, v in obj.items() if isinstance(v, str) and len(v) > MAX_TEXT]
    if not long:
        return obj
    out = dict(obj)
    for k in long:
        out[k] = out[k][:MAX_TEXT]
    out["truncated"] = True
    return out


def limit_text(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every string cut to `MAX_TEXT`, each object cut marked ``truncated``."""
    out = _cut(record)
    for key in ("edits", "findings"):
        items = out.get(key)
        if isinstance(items, list):
            cut = [_cut(x) if isinstance(x, dict) else x for x in items]
            if any(a is not b for a, b in zip(cut, items, strict=True)):
                out = out if out is not record else dict(record)
                out[key] = cut
    return out
