"""A griffe extension for the API reference (mkdocs.yml): doctests shown as code, and no private
name in what it shows.

Markdown reads a docstring's ``>>>`` lines as nested block quotes; each run of them (up to the
next blank line, as doctest reads an example and its output) is fenced as ``pycon``, so the page
shows the session with its prompts, as the reader types it.  A Sphinx role (``:data:`NAME```),
which Markdown does not know, is shown as the code it names.

A signature or an attribute whose value is written with a module's private names
(``rules: frozenset[str] = _MEANING_KEPT``, ``RULES = tuple(_BY_NAME[name] ...)``) would send the
reader to names the reference does not document.  Such a default is shown as ``...`` (the
convention of typeshed's stubs for "a default, not spelt here"), such an attribute without its
value, such an annotation (a private ``Protocol``) left out; the docstring says what it is.
Both run once the package is loaded, after griffe's dataclasses extension has made
``__init__`` from the fields.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:data|func|class|meth|attr|mod|obj):`")
_PRIVATE = re.compile(r"(?<![\w.'\"])_[A-Za-z]\w*")


def fence_doctests(text: str) -> str:
    """The docstring with each run of ``>>>`` lines and their output in a ``pycon`` fence."""
    out: list[str] = []
    fenced = False  # inside a fence the docstring has already
    session: list[str] = []
    for line in [*text.splitlines(), ""]:
        if session and line.strip():
            session.append(line)
            continue
        if session:
            indent = session[0][: len(session[0]) - len(session[0].lstrip())]
            out += [f"{indent}```pycon", *session, f"{indent}```"]
            session = []
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.lstrip().startswith(">>>"):
            session.append(line)
        else:
            out.append(line)
    return "\n".join(out[:-1])


def _private(value: object) -> bool:
    return value is not None and bool(_PRIVATE.search(str(value)))


class PublicDefaults(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub("`", fence_doctests(obj.docstring.value))
        for member in obj.members.values():
            if member.is_alias:
                continue
            if isinstance(member, griffe.Attribute):
                self._walk(member, seen)
                if _private(member.value):
                    member.value = None
            elif isinstance(member, griffe.Function):
                self._walk(member, seen)
                for parameter in member.parameters:
                    if _private(parameter.default):
                        parameter.default = "..."
                    if _private(parameter.annotation):
                        parameter.annotation = None
            elif isinstance(member, griffe.Module | griffe.Class):
                self._walk(member, seen)
