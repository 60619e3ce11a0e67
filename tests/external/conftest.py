"""Fixtures of the tests that drive a real sandbox process with outside tools."""

from tests.external._proc import sandbox_proc  # noqa: F401 (a fixture)
