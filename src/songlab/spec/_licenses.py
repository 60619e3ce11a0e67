"""License tiers: their integers and names, and the one license parser."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Final

__all__ = [
    "DEFAULT_LICENSE",
    "LICENSE_BY_NAME",
    "LICENSE_NAMES",
    "LICENSE_NAMES_WITH_UNSET",
    "License",
    "LicenseError",
    "effective_license",
    "parse_license",
]


class License(IntEnum):
    """License tiers: the native ``license`` integer (0 means unset -> royalty-free)."""

    UNSPECIFIED = 0
    ROYALTY_FREE = 1
    STANDARD = 2
    DISTRIBUTION = 3
    SYNC = 4
    MASTER = 5

    @property
    def tier_name(self) -> str:
        """The name used by the dedicated and workflow routes (``royalty_free`` ...)."""
        return LICENSE_NAMES[self]


LICENSE_NAMES: Final[dict[int, str]] = {
    1: "royalty_free",
    2: "standard",
    3: "distribution",
    4: "sync",
    5: "master",
}
# 0 (unspecified) is treated as royalty-free by the service.
LICENSE_NAMES_WITH_UNSET: Final[dict[int, str]] = {0: "royalty_free", **LICENSE_NAMES}
LICENSE_BY_NAME: Final[dict[str, int]] = {v: k for k, v in LICENSE_NAMES.items()}
DEFAULT_LICENSE: Final[int] = 1


def effective_license(value: int | None) -> int:
    """0 or None -> royalty-free (1); 1-5 unchanged. Range is not checked here."""
    return DEFAULT_LICENSE if not value else int(value)


class LicenseError(ValueError):
    """A license value breaks the rule; ``field`` and ``rule`` name it (str: ``field: rule``)."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


def parse_license(
    value: Any, *, field: str = "license", names_only: bool = False, ints_only: bool = False
) -> int:
    """THE license parser: an integer 0-5 or a tier name -> the integer 0-5 (0 = unset).

    ``names_only``: the dedicated and workflow routes take a tier name only;
    ``ints_only``: the native route takes the integer only.
    ``None`` is not a license here (callers apply their default first).
    Raises :class:`LicenseError` naming the field and the rule.
    """
    names = ", ".join(LICENSE_BY_NAME)
    if ints_only and (isinstance(value, bool) or not isinstance(value, int)):
        raise LicenseError(field, f"must be an integer 0-5, got {type(value).__name__}")
    if isinstance(value, str):
        if value not in LICENSE_BY_NAME:
            raise LicenseError(field, f"must be one of {names}, got {value!r}")
        return LICENSE_BY_NAME[value]
    if names_only:
        raise LicenseError(field, f"must be one of {names}, got {value!r}")
    if isinstance(value, bool):
        raise LicenseError(field, "must be an integer 0-5 or a tier name, not a bool")
    if isinstance(value, int):
        if not 0 <= value <= 5:
            raise LicenseError(
                field, f"must be an integer 0-5 (0 = unset = royalty_free), got {value}"
            )
        return value
    raise LicenseError(field, f"must be an integer 0-5 or a tier name, got {type(value).__name__}")
