"""File names of what was made: a prompt's first words, a take's name, naming templates.

One place for the names a person sees on disk, so a take downloaded from the generation
form (:func:`take_filename`) and the same take exported with the library
(:mod:`songlab.ledger.library`) are named alike. A template is a relative path with
``{field}`` parts (:data:`FIELDS`), e.g. ``{project}/{model}/{prompt}-take{take}.{ext}``;
each field is made a safe path component (no separator, control or reserved character,
at most 100 characters), so no value can leave the export folder.
"""

from __future__ import annotations

import contextlib
import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Final

__all__ = [
    "FIELDS",
    "TEMPLATE",
    "UNKNOWN",
    "check_template",
    "path_part",
    "render",
    "short_id",
    "slug",
    "take_filename",
]

TEMPLATE: Final[str] = "{project}/{model}/{prompt}-take{take}-{id}{part}.{ext}"
UNKNOWN: Final[str] = "unknown"
# the fields a template may use, and what each one holds
FIELDS: Final[dict[str, str]] = {
    "project": "the project label (songlab.ledger.attribution), else 'no-project'",
    "notebook": "the notebook or script that made the task (its file name, no suffix)",
    "operation": "generate_song, separate_stems, ...",
    "model": "v5, v6, v7, 12stem, ...",
    "tier": "the license tier's name (royalty_free ... master)",
    "take": "the take number of the request (songlab's record)",
    "prompt": "the first words of the prompt, as a file name (songlab's record or prompts=)",
    "date": "the day the task was made, YYYY-MM-DD (UTC)",
    "task": "the whole task id",
    "id": "the task id's first 8 characters",
    "asset": "the asset's name (mix, vocals, ...), else its number",
    "part": "'' for a task with one asset, else '-' and the asset's name",
    "n": "the asset's number in its task, from 1",
    "ext": "the file type (mp3, wav, ...), from the asset or its bytes",
}
_BAD: Final = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]+')


def slug(text: str, *, words: int = 6, max_len: int = 48) -> str:
    """The first ``words`` words of ``text`` as a file-name part: ASCII, lower case, words
    joined by ``-`` (``"Slow sad piano ballad, in A minor"`` -> ``"slow-sad-piano-ballad-in-a"``);
    ``""`` when nothing is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", folded.lower())[:words]
    out = "-".join(parts)
    return out[:max_len].rstrip("-")


def short_id(task_id: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", task_id.split("_", 1)[-1])[:8] or UNKNOWN


def take_filename(
    *, model: str | None, take: int | None, prompt: str | None, task_id: str, ext: str = "mp3"
) -> str:
    """The file name of one take (a take's download in the form, and the default export name): ``v7-take2-slow-sad-piano-ballad-3f2c1a2b.mp3`` (model,
    take, the prompt's first words, the task id's first 8 characters)."""
    words = slug(prompt or "")
    parts = [
        path_part(model or UNKNOWN),
        f"take{take if take is not None else UNKNOWN}",
        *([words] if words else []),
        short_id(task_id),
    ]
    return "-".join(parts) + f".{ext.lstrip('.') or 'bin'}"


def path_part(value: object) -> str:
    """A value as one path component: no separator, control or reserved character, no
    leading or trailing dot or space, at most 100 characters."""
    text = _BAD.sub("-", str(value)).strip(" .")
    return text[:100].strip(" .") or UNKNOWN


def check_template(template: str) -> list[str]:
    if not isinstance(template, str) or not template.strip():
        raise ValueError("template: a non-empty text such as " + TEMPLATE)
    try:
        names = [name for _, name, _s, _c in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ValueError(f"template: {exc} in {template!r}") from None
    unknown = sorted({n for n in names if n not in FIELDS})
    if unknown:
        raise ValueError(
            f"template: unknown field {', '.join('{' + n + '}' for n in unknown)}; "
            f"the fields are {', '.join('{' + f + '}' for f in FIELDS)}"
        )
    if not template.endswith(".{ext}") or names.count("ext") != 1:
        raise ValueError(f"template: must end with .{{ext}} (and name it once), got {template!r}")
    if template.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", template):
        raise ValueError(f"template: must be a relative path, got {template!r}")
    return names


def render(template: str, values: Mapping[str, object]) -> str:
    """The template filled in, each field made a safe path component; the literal parts of
    the template keep their ``/``. Refuses a path that would leave the folder."""
    out = []
    for literal, name, spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        if name is not None:
            value = values[name]
            if spec:  # {take:02d}: a format spec where the value takes it
                with contextlib.suppress(ValueError, TypeError):
                    value = format(value, spec)
            out.append(path_part(value) if value != "" else "")
    parts = [p.strip(" ") for p in "".join(out).replace("\\", "/").split("/")]
    parts = [p for p in parts if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"template: {template!r} gives the path {'/'.join(parts)!r}")
    return "/".join(parts)
