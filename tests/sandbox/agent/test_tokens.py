"""The tokenizer is the documented rule, and the fee is exact Decimal at the tier's rates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from songlab.sandbox.agent.tokens import Usage, count_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("a", 1),
        ("song", 1),
        ("songs", 2),  # 5 chars -> ceil(5/4)
        ("orchestration", 4),  # 13 chars
        ("Hello, world!", 6),  # Hello(2) ,(1) world(2) !(1)
        ("a b c", 3),
        ('{"a": 1}', 7),  # { " a " : 1 } -> seven pieces of one token
    ],
    ids=["empty", "spaces", "a", "song", "songs", "long-word", "punct", "words", "json"],
)
def test_count_tokens_rule(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_count_tokens_is_near_four_chars_per_token_on_prose() -> None:
    text = (
        "Write lyrics about a rainy night in Lisbon, then make a jazz song with them "
        "and split it into stems so the singer can practise over the instrumental."
    )
    n = count_tokens(text)
    assert 0.18 * len(text) <= n <= 0.35 * len(text)


def test_count_tokens_refuses_non_text() -> None:
    with pytest.raises(TypeError, match="text"):
        count_tokens(b"bytes")  # type: ignore[arg-type]


def test_usage_rereads_context_each_call() -> None:
    u = Usage()
    u.model_call(["one two"], "three")  # "three" has 5 chars: 2 tokens
    u.model_call(["one two", "three"], "four")
    assert u.input_tokens == 2 + (2 + 2)
    assert u.output_tokens == 2 + 1
    assert u.model_calls == 2
    assert u.as_dict() == {"input_tokens": 6, "output_tokens": 3}


@pytest.mark.parametrize(
    ("tier", "expected"),
    [
        # 1000 in, 200 out, 3 calls
        ("flash", Decimal("0.00000067") * 1000 + Decimal("0.00000213") * 200 + Decimal("0.003")),
        ("standard", Decimal("0.00122") + Decimal("0.00271") + Decimal("0.003")),
        ("pro", Decimal("0.006") + Decimal("0.006") + Decimal("0.003")),
    ],
    ids=["flash", "standard", "pro"],
)
def test_fee_at_tier_rates(tier: str, expected: Decimal) -> None:
    u = Usage(input_tokens=1000, output_tokens=200)
    fee = u.fee(tier, sub_tool_calls=3)
    assert fee == expected
    assert isinstance(fee, Decimal)
