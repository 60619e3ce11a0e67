"""Errors of :mod:`songlab.listening`.

::

    ListeningError (ValueError)   bad input; names the argument and the rule
    SessionError (RuntimeError)   an action the session's state does not allow
     └── NotPlayedError           answering before every clip of the trial was played
"""

from __future__ import annotations


class ListeningError(ValueError):
    """Bad input to a listening function: ``argument`` names it, ``rule`` says what was wrong."""

    def __init__(self, argument: str, rule: str) -> None:
        self.argument = argument
        self.rule = rule
        super().__init__(f"{argument}: {rule}")


class SessionError(RuntimeError):
    """The session's state does not allow this (already answered, revealed, not revealed...)."""


class NotPlayedError(SessionError):
    """An answer came before every clip of its trial was played (``mark_played``)."""
