"""Run benchmarks and write their headline figures into docs/benchmarks.md's table.

Each script in ``benchmarks/`` prints its headline as its last line, ``name: value``. This
runs the scripts named (all by default), one at a time, and replaces each one's row of the
table between the ``<!-- bench-table -->`` markers with its figure, the wall time the script
took, the date and the machine (cores, CPU, load average when it started). Rows of scripts
not run keep their last figure and its date, so the table is always the latest of each.

    .venv/bin/python scripts/bench_table.py                 # every benchmark
    .venv/bin/python scripts/bench_table.py report_scale    # one, the others' rows kept
"""

from __future__ import annotations

import ast
import os
import platform
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- bench-table -->", "<!-- /bench-table -->"
HEADER = (
    "| benchmark | what it measures | headline | script's wall time | measured | machine |\n"
    "|---|---|---|---|---|---|"
)
_ROW = re.compile(r"^\| `(?P<name>\w+)` \|")


def machine() -> str:
    """Cores, CPU model and the load average as the script starts."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M)
        model = found.group(1).strip() if found else model
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, {model}, load {load:.1f}"


def purpose(script: Path) -> str:
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    return first.replace("|", "/").replace("``", "`").rstrip(".")


def run(script: Path) -> str:
    """The script's table row (its last line is the headline; a failure says so)."""
    where = machine()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    took = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode == 0 and lines and ":" in lines[-1]:
        headline = f"`{lines[-1].strip()}`"
    else:
        headline = (
            f"failed (exit {proc.returncode}): {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    name = script.stem
    return f"| `{name}` | {purpose(script)} | {headline} | {took:.0f} s | {day} | {where} |"


def rows_of(text: str) -> dict[str, str]:
    body = text.split(START, 1)[1].split(END, 1)[0] if START in text else ""
    return {m.group("name"): line for line in body.splitlines() if (m := _ROW.match(line))}


def write(rows: dict[str, str]) -> None:
    text = DOC.read_text(encoding="utf-8")
    table = "\n".join([HEADER, *(rows[k] for k in sorted(rows))])
    block = f"{START}\n{table}\n{END}"
    if START in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text, encoding="utf-8")


def main(names: list[str]) -> int:
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    chosen = [s for s in scripts if not names or s.stem in names]
    unknown = set(names) - {s.stem for s in scripts}
    if unknown:
        print(f"no such benchmark: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    rows = rows_of(DOC.read_text(encoding="utf-8"))
    rows = {k: v for k, v in rows.items() if (ROOT / "benchmarks" / f"{k}.py").exists()}
    for script in chosen:
        print(f"== {script.stem}", flush=True)
        rows[script.stem] = run(script)
        print(rows[script.stem], flush=True)
        write(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
