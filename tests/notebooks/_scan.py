"""Scan executed notebooks for what must never be committed: API keys and machine paths.

Everything a reader of the notebook on GitHub would see is scanned: every output of
every code cell (stream text, error tracebacks, every text-like MIME type, HTML with
its embedded ``data:`` URIs removed) and the saved widget state. Binary payloads
(``image/*``, base64 data URIs) are skipped: they cannot carry text a reader sees, and
base64's alphabet would make path patterns match by chance.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Finding", "scan_notebook", "scan_text"]

# sk- followed by key characters: the demo key "sk-sandbox-demo" included.
API_KEY = re.compile(r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{5,}")
# An absolute path of the machine: /work/, /root/, /home/, /tmp/, macOS and Windows homes.
ABS_PATH = re.compile(
    r"(?<![\w.~/-])/(?:work|root|home|tmp|Users|private|var/folders|opt/conda|usr/local)/"
    r"|\b[A-Za-z]:\\{1,2}(?:Users|Documents and Settings)\\"
)
DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]+")
BINARY_MIME = ("image/", "audio/", "video/")


@dataclass(frozen=True)
class Finding:
    where: str  # "cell 3 output 0 text/plain", "widget state"
    kind: str  # "api key" or "absolute path"
    excerpt: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: ...{self.excerpt}..."


def _secrets() -> list[str]:
    """Literal keys configured in this environment (scanned for too)."""
    key = os.environ.get("SONGLAB_API_KEY")
    return [key] if key and len(key) >= 6 else []


def scan_text(text: str, where: str) -> list[Finding]:
    """Findings in one piece of text, with a short excerpt around each."""
    text = DATA_URI.sub("data:<base64>", text)
    found = []
    for kind, pattern in (("api key", API_KEY), ("absolute path", ABS_PATH)):
        for m in pattern.finditer(text):
            a, b = max(0, m.start() - 30), m.end() + 30
            found.append(Finding(where, kind, text[a:b].replace("\n", " ")))
    for secret in _secrets():
        if secret in text:
            found.append(Finding(where, "configured SONGLAB_API_KEY", "<the key itself>"))
    return found


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _outputs(nb: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for i, cell in enumerate(nb.get("cells", [])):
        for j, out in enumerate(cell.get("outputs", []) or []):
            where = f"cell {i} output {j}"
            kind = out.get("output_type")
            if kind == "stream":
                yield f"{where} {out.get('name')}", _text(out.get("text", ""))
            elif kind == "error":
                yield (
                    f"{where} error",
                    " ".join(
                        [
                            out.get("ename", ""),
                            out.get("evalue", ""),
                            _text(out.get("traceback", [])),
                        ]
                    ),
                )
            for mime, value in (out.get("data") or {}).items():
                if not mime.startswith(BINARY_MIME):
                    yield f"{where} {mime}", _text(value)
    widgets = nb.get("metadata", {}).get("widgets")
    if widgets:
        yield "widget state", json.dumps(widgets)


def scan_notebook(source: Path | Mapping[str, Any]) -> list[Finding]:
    """Every finding in a notebook (a path to an .ipynb or its parsed JSON)."""
    nb = (
        json.loads(Path(source).read_text(encoding="utf-8")) if isinstance(source, Path) else source
    )
    return [f for where, text in _outputs(nb) for f in scan_text(text, where)]
