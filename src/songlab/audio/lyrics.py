"""Lyrics adherence: the service's own transcription of a clip against the asked lyrics.

The transcription tool (``transcribe``, model ``whisper-transcribe-v1``, $0.03 a call in
every tier) costs money, so :func:`transcribe` prices every call first
(``client.batch``: checked and priced before anything is sent, refused whole over
``budget_usd``), sends each clip once, and goes through the client's record: a re-run
(a restarted kernel, the notebook run again) re-attaches to the tasks it already paid
for and buys nothing again. The word error rate is jiwer's, after one normalisation
(lower case, punctuation removed, whitespace collapsed) applied to both texts.

Where the text is: the spec keeps ``output.text`` for Agent One's answer and calls
``output.metadata_json`` "tool-specific", and shows neither for transcription. The
sandbox puts the transcript in ``output.text`` and its timed lines in
``metadata_json["segments"]`` (in every profile: the spec shows both fields).
:func:`transcript_text` reads ``output.text``, else a ``text``, ``transcript`` or
``lyrics`` string in ``metadata_json``, else the joined ``segments[].text``; an answer
with none of them is reported as having no transcript (its WER stays unknown, never 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import pandas as pd

from songlab.audio._audio_error import AudioError
from songlab.ledger import batch_frame

__all__ = [
    "TRANSCRIBE",
    "Transcripts",
    "normalise",
    "price",
    "transcribe",
    "transcript_text",
    "wer",
]

TRANSCRIBE: Final = {"operation": "transcribe", "model": "whisper-transcribe-v1"}


def _transform() -> Any:
    import jiwer

    return jiwer.Compose(
        [
            jiwer.ToLowerCase(),
            jiwer.RemovePunctuation(),  # type: ignore[no-untyped-call]
            jiwer.RemoveMultipleSpaces(),
            jiwer.Strip(),
            jiwer.ReduceToListOfListOfWords(),
        ]
    )


def normalise(text: str, /) -> str:
    """The text as it is scored: lower case, no punctuation, one space between words."""
    import jiwer

    words: list[list[str]] = _transform()(jiwer.ReduceToSingleSentence()(str(text).splitlines()))
    return " ".join(w for line in words for w in line)


def wer(reference: str, hypothesis: str, /) -> float:
    """Word error rate of ``hypothesis`` (the transcript) against ``reference`` (the asked
    lyrics), both normalised: (S + D + I) / N. NaN when the reference has no word."""
    import jiwer

    ref, hyp = normalise(reference), normalise(hypothesis)
    if not ref:
        return float("nan")
    if not hyp:
        return 1.0
    return float(jiwer.wer(ref, hyp))


@dataclass(frozen=True, slots=True)
class Transcripts:
    """What :func:`transcribe` got: ``text`` by file id, the ``client.batch`` result of the
    calls (task ids, costs, ``reused`` for calls the record already held; None when every
    transcript was known), the cost of the calls made now
    (``new_usd``: the service's figure where it shows one, else the list price, as
    ``cost_source`` says), and ``missing``: file ids with no transcript, and why."""

    text: dict[str, str]
    batch: Any  # songlab.client.BatchResult | None
    new_usd: Decimal
    cost_source: str = "none"
    missing: dict[str, str] = field(default_factory=dict)


_TEXT_KEYS: Final = ("text", "transcript", "lyrics")


def transcript_text(output: Any, /) -> str | None:
    """The transcript in a transcription task's ``output`` (a :class:`TaskOutput`):
    ``output.text``, else a ``text``/``transcript``/``lyrics`` string of the parsed
    ``metadata_json``, else its ``segments[].text`` joined by lines; None when the answer
    holds none of them."""
    if output is None:
        return None
    text = getattr(output, "text", None)
    if isinstance(text, str):
        return text
    meta = getattr(output, "metadata", None)
    if not isinstance(meta, Mapping):
        return None
    for name in _TEXT_KEYS:
        if isinstance(meta.get(name), str):
            return str(meta[name])
    segments = meta.get("segments")
    if isinstance(segments, list) and segments:
        lines = [s.get("text") for s in segments if isinstance(s, Mapping)]
        if lines and all(isinstance(t, str) for t in lines):
            return "\n".join(str(t) for t in lines)
    return None


def _requests(file_ids: Sequence[str], language: str | None) -> list[dict[str, Any]]:
    out = []
    for fid in file_ids:
        payload: dict[str, Any] = {"audio": f"file_id:{fid}"}
        if language:
            payload["language"] = language
        out.append({**TRANSCRIBE, "payload": payload})
    return out


def price(client: Any, file_ids: Sequence[str], /) -> Decimal:
    """The list price of transcribing every clip once (nothing is sent)."""
    one = client.estimate(operation=TRANSCRIBE["operation"], model=TRANSCRIBE["model"]).usd
    return Decimal(one) * len(list(dict.fromkeys(file_ids)))


def transcribe(
    client: Any,
    file_ids: Sequence[str],
    /,
    *,
    budget_usd: Decimal | int | str | None = None,
    language: str | None = None,
    known: Mapping[str, str] | None = None,
) -> Transcripts:
    """Transcribe each clip (by file id) with the service's tool, once.

    Priced and checked before anything is sent: with ``budget_usd`` the list price of the
    calls the record does not already hold must fit in it, or ``BudgetExceeded`` is raised
    and nothing is sent. ``known``: transcripts already held (the adherence cache) by file
    id; those clips are not sent at all. Raises :class:`AudioError` naming ``file_ids``
    for an empty or non-string id.
    """
    ids = list(dict.fromkeys(file_ids))
    if any(not isinstance(f, str) or not f for f in ids):
        raise AudioError("file_ids", "must be the file ids (strings) of the clips to transcribe")
    have = dict(known or {})
    todo = [f for f in ids if f not in have]
    batch = None
    new = Decimal(0)
    sources: set[str] = set()
    missing: dict[str, str] = {}
    if todo:
        batch = client.batch(_requests(todo, language), budget_usd=budget_usd)
        made = batch_frame(batch)  # the ledger's one rule of what a row costs
        costs = zip(made["cost_usd"], made["cost_source"], strict=True)
        for fid, row, (cost, source) in zip(todo, batch.rows, costs, strict=True):
            if not row.reused and pd.notna(cost):
                new += Decimal(cost)
                sources.add(str(source))
            if row.status != "completed":
                missing[fid] = f"transcription {row.status}: {row.error or 'no detail'}"
                continue
            text = transcript_text(client.generations.get(row.task_id).output)
            if text is None:
                missing[fid] = (
                    "the service's answer holds no transcript (output.text, metadata_json)"
                )
                continue
            have[fid] = text
    source = "+".join(sorted(sources)) if sources else "none"
    return Transcripts(
        text={f: have[f] for f in ids if f in have},
        batch=batch,
        new_usd=new,
        cost_source=source,
        missing=missing,
    )
