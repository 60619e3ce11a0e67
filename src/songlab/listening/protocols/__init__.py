"""The listening protocols, one module each (listed in :mod:`songlab.listening.registry`).

A protocol module holds everything of its protocol: options and trial design, labels,
the controls that answer a trial, the answer check, result rows, the statistics of one
listener and of a panel, the panel's summary and the scripted listener. Nothing else in
songlab names a protocol; ``tests/architecture/test_protocols.py`` holds that rule.
"""

from __future__ import annotations

__all__: list[str] = []
