"""The table from an error response to its class: by `error` code, never by status."""

from __future__ import annotations

import json

import pytest

from songlab.client import (
    APIError,
    DependencyUnavailable,
    Forbidden,
    InsufficientFunds,
    InvalidApiKey,
    InvalidGenerationInput,
    MissingField,
    NotFound,
    PipelineError,
    RateLimited,
    ResourceNotFound,
    SonglabError,
    ToolNotPriced,
    Unauthenticated,
    UnexpectedResponse,
    UnknownTool,
    ValidationError,
    error_from_response,
)
from songlab.client._exceptions import ERROR_CLASSES
from songlab.spec import OTHER_ERRORS, PIPELINE_ERRORS, ErrorCode

CLASSES = {
    "UnknownTool": UnknownTool,
    "InsufficientFunds": InsufficientFunds,
    "ToolNotPriced": ToolNotPriced,
    "InvalidGenerationInput": InvalidGenerationInput,
    "RateLimited": RateLimited,
    "DependencyUnavailable": DependencyUnavailable,
    "UNAUTHENTICATED": Unauthenticated,
    "INVALID_API_KEY": InvalidApiKey,
    "FORBIDDEN": Forbidden,
    "NOT_FOUND": NotFound,
    "MISSING_FIELD": MissingField,
    "ResourceNotFound": ResourceNotFound,
}


def test_one_class_per_code_of_the_spec():
    assert set(ERROR_CLASSES) == {c.value for c in ErrorCode} == set(CLASSES)
    assert len(set(ERROR_CLASSES.values())) == len(ErrorCode)


@pytest.mark.parametrize("code", [c.value for c in PIPELINE_ERRORS], ids=str)
def test_pipeline_errors(code):
    status, retryable = PIPELINE_ERRORS[ErrorCode(code)]
    body = {"error": code, "message": f"{code} happened", "retryable": retryable}
    err = error_from_response(
        status, json.dumps(body).encode(), method="POST", path="/v1/generations"
    )
    assert type(err) is CLASSES[code]
    assert isinstance(err, PipelineError) and isinstance(err, APIError)
    assert (err.code, err.status_code, err.retryable) == (code, status, retryable)
    assert err.message == f"{code} happened"
    assert code in str(err) and "/v1/generations" in str(err)


@pytest.mark.parametrize("code", [c.value for c in OTHER_ERRORS], ids=str)
def test_other_errors_are_never_retryable(code):
    status = OTHER_ERRORS[ErrorCode(code)]
    err = error_from_response(status, json.dumps({"error": code}).encode())
    assert type(err) is CLASSES[code]
    assert not isinstance(err, PipelineError)
    assert err.retryable is False and err.message is None and err.status_code == status


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (422, "ToolNotPriced", ToolNotPriced),
        (422, "InvalidGenerationInput", InvalidGenerationInput),
        (404, "NOT_FOUND", NotFound),
        (404, "ResourceNotFound", ResourceNotFound),
        (401, "UNAUTHENTICATED", Unauthenticated),
        (401, "INVALID_API_KEY", InvalidApiKey),
        # the class follows the code even when the status disagrees
        (400, "RateLimited", RateLimited),
    ],
)
def test_shared_statuses_are_told_apart_by_code(status, code, cls):
    assert type(error_from_response(status, json.dumps({"error": code}).encode())) is cls


def test_retryable_comes_from_the_body():
    body = {"error": "RateLimited", "message": "slow down", "retryable": False}
    assert error_from_response(429, json.dumps(body).encode()).retryable is False


def test_xml_storage_error_is_resource_not_found():
    xml = b"<?xml version='1.0'?><Error><Code>ResourceNotFound</Code><Message>x</Message></Error>"
    err = error_from_response(404, xml)
    assert type(err) is ResourceNotFound and err.code == "ResourceNotFound"


@pytest.mark.parametrize(
    "content",
    [b"Internal Server Error", b'{"detail": "boom"}', b"", b'{"error": "Teapot"}'],
    ids=["text", "json-no-code", "empty", "unknown-code"],
)
def test_anything_else_is_unexpected_response(content):
    err = error_from_response(500, content)
    assert type(err) is UnexpectedResponse and err.status_code == 500 and not err.retryable


def test_client_side_errors_share_the_base():
    err = ValidationError("license", "must be 0-5")
    assert isinstance(err, SonglabError) and isinstance(err, ValueError)
    assert (err.field, err.rule, str(err)) == ("license", "must be 0-5", "license: must be 0-5")


def test_tree_is_drawn_in_the_docstring():
    import songlab.client._exceptions as mod

    for cls in CLASSES.values():
        assert cls.__name__ in mod.__doc__
