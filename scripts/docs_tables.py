"""The docs' tables of what the code has, written from the code: run it after adding an
operation, a workflow route, a named client method, a report table or a report option.

    .venv/bin/python scripts/docs_tables.py           # rewrite the tables in docs/
    .venv/bin/python scripts/docs_tables.py --check   # exit 1 (naming them) if one is stale

Each table sits in a docs page between two markers::

    <!-- BEGIN generated:NAME (scripts/docs_tables.py) -->
    ...
    <!-- END generated:NAME -->

and is made from the spec registry (``songlab.spec``: operations, workflow and dedicated
routes, compat routes), from the client's resources (``songlab.client``: every named
method of every resource), from the report's registry of tables
(``songlab.ledger.tables.TABLES``) or from ``songlab report``'s parser
(``songlab.cli.report_options.parser``). ``tests/architecture/test_docs_tables.py`` fails when a page's
table is not what this script would write.
"""

from __future__ import annotations

import argparse
import html
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path

from songlab.client._base import BaseClient
from songlab.client._typing import Slot, _Method
from songlab.spec import COMPAT_ROUTES, REGISTRY, ROUTES, WORKFLOWS, Field, Route

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARK = re.compile(
    r"(<!-- BEGIN generated:(?P<name>[a-z-]+) \(scripts/docs_tables\.py\) -->\n)"
    r"(?P<body>.*?)"
    r"(<!-- END generated:(?P=name) -->)",
    re.S,
)


def _field(f: Field) -> str:
    name = f"**{f.name}**" if f.required else f.name
    return name if f.name != "license" else f"{name} (a tier name, default `{f.default}`)"


def _steps(route: Route) -> str:
    return ", ".join(f"{s.name} (`{s.operation}` {s.model})" for s in route.steps)


def workflow_routes() -> str:
    """Every workflow route of the registry: its body and its billed steps."""
    rows = ["| route | body fields (required in bold) | billed steps, in order |", "|---|---|---|"]
    for path, route in WORKFLOWS.items():
        fields = ", ".join(_field(f) for f in route.fields)
        own = " (the sandbox's own: not in the spec)" if route.origin == "sandbox" else ""
        rows.append(f"| `POST /v1/{path}`{own} | {fields} | {_steps(route)} |")
    return "\n".join(rows) + "\n"


def dedicated_routes() -> str:
    """The dedicated routes (voice clones, song translations) of the registry."""
    rows = ["| route | body fields (required in bold) | billed steps, in order |", "|---|---|---|"]
    for path, route in ROUTES.items():
        if route.kind != "dedicated":
            continue
        fields = ", ".join(_field(f) for f in route.fields)
        rows.append(f"| `POST /v1/{path}` | {fields} | {_steps(route) or 'one task'} |")
    return "\n".join(rows) + "\n"


def operations() -> str:
    """Every operation of the registry: its models, its payload and its price row."""
    rows = [
        "| operation | what | models | payload fields (required in bold) | price row |",
        "|---|---|---|---|---|",
    ]
    for name, op in REGISTRY.items():
        what = op.title + (" (internal: Agent One and the pipelines only)" if op.internal else "")
        fields = ", ".join(_field(f) for f in op.fields) or "built by the pipeline"
        price = f"`{op.pricing_key}`" if op.pricing_key else "usage (Agent One's rates)"
        rows.append(f"| `{name}` | {what} | {', '.join(op.models)} | {fields} | {price} |")
    return "\n".join(rows) + "\n"


def compat_routes() -> str:
    """Every compat route and the operation and model it runs."""
    rows = ["| route | runs | body fields (required in bold) |", "|---|---|---|"]
    for path, (compat, model) in COMPAT_ROUTES.items():
        fields = ", ".join(_field(f) for f in compat.fields)
        rows.append(f"| `POST {path}` | `{compat.operation}` {model} | {fields} |")
    return "\n".join(rows) + "\n"


def _first_line(doc: str | None) -> str:
    """A docstring's first paragraph as one line of Markdown (reST roles and double
    backticks become code spans)."""
    text = " ".join((doc or "").strip().split("\n\n")[0].split())
    text = re.sub(r":(?:class|meth|func|data|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


def client_methods() -> str:
    """Every named method of every resource of the clients, as its docstring opens."""
    rows = ["| method | what it does |", "|---|---|"]
    for slot_name, slot in vars(BaseClient).items():
        if not isinstance(slot, Slot):
            continue
        resource = slot.make if isinstance(slot.make, type) else None
        if resource is None:
            continue
        for name, member in inspect.getmembers(resource):
            if isinstance(member, _Method) and not name.startswith("_"):
                rows.append(f"| `client.{slot_name}.{name}` | {_first_line(member.__doc__)} |")
    return "\n".join(rows) + "\n"


def report_tables() -> str:
    """Every table of the report (its CSV file and Excel sheet), in the registry's order."""
    from songlab.ledger.tables import TABLES as REPORT_TABLES

    rows = ["| table (CSV file, Excel sheet) | what it holds |", "|---|---|"]
    rows += [f"| `{t.name}` | {html.escape(t.doc, quote=False)} |" for t in REPORT_TABLES]
    return "\n".join(rows) + "\n"


def _option(action: argparse.Action) -> str:
    names = ", ".join(f"`{o}`" for o in action.option_strings)
    if action.choices is not None:
        return f"{names} " + " or ".join(f"`{c}`" for c in action.choices)
    if action.nargs == 0:
        return names
    return f"{names} `{action.metavar or action.dest.upper()}`"


def report_options() -> str:
    """Every option of ``songlab report``, with its help line, in the parser's order."""
    from songlab.cli.report_options import parser

    rows = ["| option | what it does |", "|---|---|"]
    for action in parser()._actions:
        if action.option_strings and action.help != argparse.SUPPRESS and action.dest != "help":
            rows.append(f"| {_option(action)} | {html.escape(str(action.help), quote=False)} |")
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "client-methods": client_methods,
    "compat-routes": compat_routes,
    "dedicated-routes": dedicated_routes,
    "operations": operations,
    "report-options": report_options,
    "report-tables": report_tables,
    "workflow-routes": workflow_routes,
}


def rewritten(text: str) -> str:
    """``text`` with every generated table made again."""

    def fill(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(
                f"no table called {name!r} (scripts/docs_tables.py knows {sorted(TABLES)})"
            )
        return m.group(1) + "\n" + TABLES[name]() + "\n" + m.group(4)

    return MARK.sub(fill, text)


def stale(docs: Path = DOCS) -> list[str]:
    """The pages whose tables differ from what the code makes now."""
    return [
        str(p.relative_to(docs.parent))
        for p in sorted(docs.rglob("*.md"))
        if rewritten(text := p.read_text(encoding="utf-8")) != text
    ]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        out = stale()
        for page in out:
            print(f"{page}: a generated table is stale; run scripts/docs_tables.py")
        return 1 if out else 0
    if argv:
        print(__doc__)
        return 2
    for p in sorted(DOCS.rglob("*.md")):
        text = p.read_text(encoding="utf-8")
        new = rewritten(text)
        if new != text:
            p.write_text(new, encoding="utf-8")
            print(f"rewrote {p.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
