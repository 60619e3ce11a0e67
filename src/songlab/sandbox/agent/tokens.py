"""Token counting for Agent One's usage fee: a documented, deterministic tokenizer.

The sandbox has no real language model, so it counts tokens with a small
word-piece-like rule that lands near the familiar "about 4 characters per
token" of English text:

* the text is split into runs of word characters (``\\w+``) and single
  non-space symbols (punctuation, brackets, quotes, ...);
* a word of n characters counts ``ceil(n / 4)`` tokens (so "a" and "song" are
  one token, "orchestration" is four);
* every symbol counts one token; whitespace counts nothing.

:class:`Usage` accumulates the input and output tokens of a run's model calls.
Each model call reads its whole context again (as a chat model does), so the
input tokens of a run grow with every turn.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from songlab.pricing import AGENT_RATES

__all__ = ["CHARS_PER_PIECE", "Usage", "count_tokens"]

CHARS_PER_PIECE = 4
_PIECES = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """Tokens in ``text`` under the rule of the module docstring."""
    if not isinstance(text, str):
        raise TypeError(f"text: must be a str, got {type(text).__name__}")
    total = 0
    for piece in _PIECES.findall(text):
        total += (
            math.ceil(len(piece) / CHARS_PER_PIECE) if piece[0].isalnum() or piece[0] == "_" else 1
        )
    return total


@dataclass(slots=True)
class Usage:
    """Input and output tokens of a run so far, and the model calls that made them."""

    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0

    def model_call(self, context: Iterable[str], output: str) -> None:
        """Record one model call that read every text in ``context`` and wrote ``output``."""
        self.input_tokens += sum(count_tokens(t) for t in context)
        self.output_tokens += count_tokens(output)
        self.model_calls += 1

    def fee(self, tier: str, *, sub_tool_calls: int) -> Decimal:
        """The run's own fee: tokens at the tier's rates plus the per-call charge.

        Exact in Decimal (the rates have at most 8 decimals, so the fee does too).
        """
        rates = AGENT_RATES[tier]
        return (
            rates.input_token * self.input_tokens
            + rates.output_token * self.output_tokens
            + rates.sub_tool_call * sub_tool_calls
        )

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
