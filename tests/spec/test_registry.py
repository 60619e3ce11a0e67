"""The spec registry is consistent with itself, and its one license parser."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import songlab.spec as spec
from songlab import pricing
from songlab.spec import (
    COMPAT,
    COMPAT_ROUTES,
    LIMITS,
    REGISTRY,
    ROUTES,
    WORKFLOWS,
    LicenseError,
    parse_license,
)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    return imported


def test_the_registry_is_a_leaf() -> None:
    """No module of the package imports songlab outside it, nor a third-party package."""
    modules = sorted(Path(spec.__file__).parent.glob("*.py"))
    assert len(modules) > 5  # the package's parts were found
    for path in modules:
        imported = _imports(path)
        outside = [m for m in imported if m.startswith("songlab") and m != "songlab.spec"]
        assert [m for m in outside if not m.startswith("songlab.spec.")] == [], path.name
        assert not [m for m in imported if m.split(".")[0] in ("pydantic", "httpx", "numpy")]


def test_the_package_says_every_name_of_its_parts() -> None:
    """``from songlab.spec import X`` works for every public name of every part."""
    for path in sorted(Path(spec.__file__).parent.glob("_[a-z]*.py")):
        part = importlib.import_module(f"songlab.spec.{path.stem}")
        for name in part.__all__:
            assert name in spec.__all__ and getattr(spec, name) is getattr(part, name), name


def test_every_billed_tool_has_a_price_and_every_step_a_tool() -> None:
    for op in REGISTRY.values():
        for model in op.models:
            if op.pricing_key is not None:
                assert (op.name, model) in pricing.PRICES
    for route in ROUTES.values():
        for step in route.steps:
            assert step.model in REGISTRY[step.operation].models, (route.path, step)
    assert set(pricing.WORKFLOW_PIPELINES) == set(WORKFLOWS)


def test_field_rules_are_well_formed() -> None:
    for owner, fields in (
        [(op.name, op.fields) for op in REGISTRY.values()]
        + [(r.path, r.fields) for r in ROUTES.values()]
        + [(c.title, c.fields) for c in COMPAT.values()]
    ):
        names = [f.name for f in fields]
        assert len(names) == len(set(names)), owner
        for f in fields:
            if f.min is not None and f.max is not None:
                assert f.min <= f.max, (owner, f.name)
            if f.type in ("choice", "tier", "license"):
                assert f.choices, (owner, f.name)
            if f.type in ("file", "file_id"):
                assert f.formats and f.max_bytes, (owner, f.name)
            if f.default is not None and f.min is not None:
                assert f.min <= f.default <= (f.max if f.max is not None else f.default)


def test_a_compat_body_states_every_rule_of_its_payload() -> None:
    """A compat body is its route's one rule pass (its payload only has files and voices
    resolved): it names every field of its operation, no rule looser than the payload's."""
    for c in COMPAT.values():
        op = REGISTRY[c.operation]
        body = {f.input or f.name: f for f in c.fields if f.type != "license"}
        assert set(body) == {f.name for f in op.fields}, c.title
        for f in op.fields:
            b = body[f.name]
            assert (b.type, b.required, b.choices, b.late, b.clamp, b.formats, b.max_bytes) == (
                f.type,
                f.required,
                f.choices,
                f.late,
                f.clamp,
                f.formats,
                f.max_bytes,
            ), b
            assert (b.min, b.max) == (f.min, f.max), b
            assert f.max_len is None or (b.max_len is not None and b.max_len <= f.max_len), b
        assert c.missing_field is None or c.field(c.missing_field).required
    assert len(COMPAT_ROUTES) == 11
    assert COMPAT_ROUTES["/v1/generate/extend"] == (COMPAT["extend_music"], "v5")


def test_the_limits_table_holds_the_song_and_effect_ranges() -> None:
    song = REGISTRY["generate_song"].field("duration_seconds")
    sfx = REGISTRY["sfx_gen"].field("duration_seconds")
    assert (song.min, song.max, song.default) == (5.0, 240.0, 30.0)
    assert (sfx.min, sfx.max, sfx.default) == (0.5, 30.0, 5.0)
    assert LIMITS["song_seconds_max"] == 240.0


def test_revoicings_take_no_lyrics() -> None:
    r = ROUTES["revoicings"]
    assert [f.name for f in r.fields] == ["song_file_id", "vocal_id", "license"]
    assert [name for name, _ in r.forbidden] == ["lyrics"] and r.vocal == "required"


@pytest.mark.parametrize(
    ("value", "kw", "expected"),
    [
        (0, {}, 0),
        (5, {}, 5),
        ("master", {}, 5),
        ("royalty_free", {"names_only": True}, 1),
        (3, {"ints_only": True}, 3),
    ],
)
def test_parse_license_accepts(value: object, kw: dict, expected: int) -> None:
    assert parse_license(value, **kw) == expected


@pytest.mark.parametrize(
    ("value", "kw", "rule"),
    [
        (6, {}, "0-5"),
        (-1, {}, "0-5"),
        (True, {}, "not a bool"),
        ("gold", {}, "one of"),
        (2.0, {}, "got float"),
        (2, {"names_only": True}, "one of"),
        ("master", {"ints_only": True}, "an integer 0-5"),
    ],
)
def test_parse_license_refuses_naming_the_field(value: object, kw: dict, rule: str) -> None:
    with pytest.raises(LicenseError) as info:
        parse_license(value, field="x.license", **kw)
    assert info.value.field == "x.license" and rule in info.value.rule
    assert str(info.value).startswith("x.license: ")
    assert isinstance(info.value, ValueError)
