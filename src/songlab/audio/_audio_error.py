"""The one error type of :mod:`songlab.audio`: bad input, named by argument."""

from __future__ import annotations


class AudioError(ValueError):
    """Bad audio input: the message names the argument and the rule it broke."""

    def __init__(self, argument: str, rule: str) -> None:
        self.argument = argument
        self.rule = rule
        super().__init__(f"{argument}: {rule}")
