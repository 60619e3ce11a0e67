"""The ``songlab`` command: one table of subcommands, each a module imported when it runs.

``songlab COMMAND ARGS`` looks ``COMMAND`` up in ``COMMANDS`` and calls its entry point
with ``ARGS``; the entry point returns the exit code. A new subcommand is one row here and
its module (``songlab/cli/NAME.py``, or the module that already holds its ``main``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["COMMANDS", "Command", "main", "usage", "version"]


class Command(NamedTuple):
    """A subcommand: the module and function that run it, and its line in the usage."""

    module: str
    function: str
    summary: str

    def entry(self) -> Callable[[list[str]], int]:
        fn: Callable[[list[str]], int] = getattr(
            importlib.import_module(self.module), self.function
        )
        return fn


COMMANDS: dict[str, Command] = {
    "sandbox": Command(
        "songlab._connect",
        "run_sandbox",
        "run the embedded service (same flags as `python -m songlab.sandbox`)",
    ),
    "report": Command(
        "songlab.cli.report",
        "report_main",
        "a cost report: HTML, and CSV/Excel exports (`songlab report --help`)",
    ),
    "campaign": Command(
        "songlab.cli.campaign",
        "campaign_main",
        "serve a saved listening campaign to raters (`songlab campaign serve --help`)",
    ),
    "notebooks": Command(
        "songlab.notebooks",
        "main",
        "copy the notebooks and their data into DIR (`songlab notebooks DIR`)",
    ),
}


def usage() -> str:
    """The top-level help, one line per row of ``COMMANDS``."""
    width = max(len(name) for name in COMMANDS)
    lines = [f"  {name:<{width}} {c.summary}" for name, c in COMMANDS.items()]
    return (
        "usage: songlab COMMAND [ARGS]\n       songlab --version\n\ncommands:\n"
        + "\n".join(lines)
        + "\n"
    )


def version() -> str:
    """``songlab 0.1.0``: the installed distribution's version (the package's own when it
    runs from a source tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        number = installed("songlab")
    except PackageNotFoundError:
        from songlab import __version__ as number
    return f"songlab {number}"


def main(argv: Sequence[str] | None = None) -> int:
    """``songlab ARGS``: run the subcommand ``ARGS[0]``; its exit code (2 for an unknown one)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage(), end="")
        return 0
    if args[0] in ("-V", "--version"):
        print(version())
        return 0
    command, rest = args[0], args[1:]
    found = COMMANDS.get(command)
    if found is None:
        print(f"songlab: unknown command {command!r}\n{usage()}", end="", file=sys.stderr)
        return 2
    return found.entry()(rest)
