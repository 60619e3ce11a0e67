"""The ``songlab`` command: ``songlab sandbox ...``, ``songlab report ...``, ``songlab notebooks DIR``."""

from __future__ import annotations

import sys

USAGE = """usage: songlab COMMAND [ARGS]

commands:
  sandbox   run the embedded service (same flags as `python -m songlab.sandbox`)
  report    a cost report: HTML, and CSV/Excel exports (`songlab report --help`)
  notebooks copy the notebooks and their data into DIR (`songlab notebooks DIR`)
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    command, rest = args[0], args[1:]
    if command == "sandbox":
        from songlab.sandbox.__main__ import main as sandbox_main

        return sandbox_main(rest)
    if command == "report":
        from songlab.ledger.report import main as report_main

        return report_main(rest)
    if command == "notebooks":
        from songlab.notebooks import main as notebooks_main

        return notebooks_main(rest)
    print(f"songlab: unknown command {command!r}\n{USAGE}", end="", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
