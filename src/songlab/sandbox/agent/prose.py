"""How Agent One says things: the small grammar of its plans and answers.

The planner's purposes are verb phrases ("write lyrics about rain", "make an
8-second jazz song in v5 with those lyrics"); these helpers turn them into the
sentences an LLM agent prints when it narrates a plan: "I'll write lyrics about
rain first, then make an 8-second jazz song in v5 with those lyrics." Pure
string functions, no I/O.
"""

from __future__ import annotations

__all__ = ["a_or_an", "capitalize", "length", "listing", "narrate", "seconds", "turn_sentence"]


def a_or_an(phrase: str) -> str:
    """``phrase`` with its indefinite article, by sound: "an 8-second song", "an 11-second
    song", "a 20-second song", "an upbeat song"."""
    head = phrase.lstrip()
    digits = head[: len(head) - len(head.lstrip("0123456789"))]
    if digits:
        vowel = digits.startswith("8") or digits in ("11", "18")  # eight..., eleven, eighteen
    else:
        vowel = head[:1].lower() in ("a", "e", "i", "o", "u")  # moods: "an upbeat song"
    return ("an " if vowel else "a ") + phrase


def seconds(value: float) -> str:
    """A length as an adjective: 8 -> "8-second", 2.5 -> "2.5-second"."""
    return f"{value:g}-second"


def length(value: float) -> str:
    """A length as a noun phrase: 1 -> "1 second", 8 -> "8 seconds"."""
    return f"{value:g} second" + ("" if value == 1 else "s")


def listing(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def narrate(steps: list[str]) -> str:
    """A whole plan in one sentence: "I'll A first, then B." / "I'll A first, then B, and then C." """
    if not steps:
        return "There is nothing here for a tool to do, so I'll answer in prose."
    if len(steps) == 1:
        return f"I'll {steps[0]}."
    if len(steps) == 2:
        return f"I'll {steps[0]} first, then {steps[1]}."
    middle = "".join(f", then {s}" for s in steps[1:-1])
    return f"I'll {steps[0]} first{middle}, and then {steps[-1]}."


def turn_sentence(index: int, count: int, steps: list[str]) -> str:
    """What one turn of ``count`` says before its calls (``index`` counts from 1)."""
    what = listing(steps)
    if count == 1:
        return f"I'll {what}."
    if index == 1:
        return f"First, I'll {what}."
    if index == count:
        return f"Then I'll {what}." if count == 2 else f"Finally, I'll {what}."
    return f"Next, I'll {what}."
