"""The profile fixture: one sandbox per test module and profile (default, spec, noisy).

``profile_sandbox`` is module-scoped and parametrised over :data:`PROFILES`
(ids ``default``/``spec``/``noisy``); see ``tests/profiles/_sandboxes.py``. A
module's tests run profile by profile, so at most one of its sandboxes runs at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.profiles._sandboxes import PROFILES, ProfileSandbox, running


@pytest.fixture(scope="module", params=PROFILES)
def profile_sandbox(request: pytest.FixtureRequest) -> Iterator[ProfileSandbox]:
    sb = running(request.param)
    try:
        yield sb
    finally:
        sb.stop()
