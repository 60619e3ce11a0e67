"""songlab.params: list and dict notebook parameters as papermill's -p passes them (text)."""

from __future__ import annotations

import pytest

from songlab.params import ParameterError, dicts, lists


def test_lists_keep_lists_and_read_json_text() -> None:
    assert lists(MODELS=["v5", "v7"]) == ["v5", "v7"]
    assert lists(MODELS='["v6", "v7"]') == ["v6", "v7"]  # papermill -p MODELS '["v6", "v7"]'
    assert lists(TIERS=("flash",)) == ["flash"]
    models, prompts = lists(MODELS='["v6"]', PROMPTS=["calm piano", "dark techno"])
    assert models == ["v6"] and prompts == ["calm piano", "dark techno"]
    assert dicts(WEIGHTS='{"v5": 1, "v7": 2}') == {"v5": 1, "v7": 2}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("v6, v7", "-y 'MODELS: [v6, v7]'"),
        ("[v6, v7]", "-y 'MODELS: [v6, v7]'"),  # YAML-looking text given to -p
        ('["v6", "v7"', "-y 'MODELS: [v6, v7]'"),  # cut-off JSON
        ('"v7"', "-y 'MODELS: [v7]'"),  # JSON, but not a list
        ("lofi hip hop, synth pop", '-y \'MODELS: ["lofi hip hop", "synth pop"]\''),
        (7, "-y 'MODELS: [a, b]'"),
    ],
    ids=["words", "yaml-text", "cut-json", "json-string", "spaces", "number"],
)
def test_anything_else_fails_naming_the_parameter_and_the_y_form(value: object, shown: str) -> None:
    with pytest.raises(ParameterError) as err:
        lists(MODELS=value)
    text = str(err.value)
    assert text.startswith("MODELS: must be a list") and shown in text, text


def test_a_dict_parameter_names_its_y_form() -> None:
    with pytest.raises(ParameterError, match=r"WEIGHTS: must be a dict.*-y 'WEIGHTS: \{key: value"):
        dicts(WEIGHTS="[1, 2]")
