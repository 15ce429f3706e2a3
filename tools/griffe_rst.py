"""Griffe extension for the docs site: render dpframe's reST-flavoured docstrings as Markdown.

dpframe's docstrings are plain prose with doctest examples and a little reST
(``:func:`x```, ``.. warning::``, a trailing ``::`` before a literal block).
Before mkdocstrings parses a docstring this rewrites, outside fenced blocks:

* a paragraph starting with ``>>>`` into a fenced ``pycon`` code block;
* ``:role:`~a.b.c``` into ``c`` (or ``a.b.c`` without ``~``) as inline code;
* ``.. warning::`` / ``.. note::`` and their indented body into an admonition;
* a paragraph-ending ``::`` into ``:`` (the indented block after it is code).

Used by mkdocs.yml only; not part of the installed package.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|obj|exc|const):`(~?)([^`]+)`")
_DIRECTIVE = re.compile(r"^(\s*)\.\. (warning|note|danger|caution|tip|important|attention|hint|seealso)::\s*(.*)$")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def convert(text: str) -> str:
    """Return ``text`` with doctests fenced and reST roles/directives turned into Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    fenced = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            out.append(line)
            i += 1
            continue
        if fenced:
            out.append(line)
            i += 1
            continue
        if stripped.startswith(">>>") and (not out or not out[-1].strip() or not out[-1].startswith(" ")):
            pad = line[: _indent(line)]
            if out and out[-1].strip():
                out.append("")
            out.append(f"{pad}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(f"{pad}```")
            continue
        directive = _DIRECTIVE.match(line)
        if directive:
            pad, kind, rest = directive.groups()
            base = len(pad)
            out.append(f"{pad}!!! {'info' if kind == 'seealso' else kind}")
            if rest:
                out.append(f"{pad}    {_ROLE.sub(_role, rest)}")
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                body = lines[i]
                out.append(f"{pad}    {_ROLE.sub(_role, body.strip())}" if body.strip() else "")
                i += 1
            continue
        line = _ROLE.sub(_role, line)
        if line.endswith("::") and not line.endswith(" ::"):
            line = line[:-1]
        elif line.endswith(" ::"):
            line = line[:-3]
        out.append(line)
        i += 1
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Rewrite each docstring with :func:`convert` as objects are loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
