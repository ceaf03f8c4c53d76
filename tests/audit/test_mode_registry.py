"""Modes are one registry: each names the forms it serves and carries its driver; witness sources
say which modes they serve in each form, and one check holds a source to a mode."""

from __future__ import annotations

import pytest

from vouch.audit import MODES, REPOSITORY_MODES
from vouch.audit._modes import REGISTRY, mode, mode_names
from vouch.audit._sources import SOURCES, serves
from vouch.errors import UsageError


def test_the_mode_lists_of_both_forms_come_from_the_registry() -> None:
    assert MODES == mode_names("function") == tuple(REGISTRY)
    assert mode_names("repository") == REPOSITORY_MODES
    assert {"per-trial", "lightweight"} <= set(REPOSITORY_MODES) and "static" not in REPOSITORY_MODES
    assert all(callable(m.driver) for m in REGISTRY.values())


def test_an_unknown_mode_or_one_a_form_lacks_is_one_error_listing_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=f"the modes are {', '.join(mode_names('function'))}$"):
        mode("sampled", "function")
    with pytest.raises(UsageError, match="is built for the function form; the repository form's modes are per-trial"):
        mode("static", "repository")
    assert mode("lightweight", "repository") is REGISTRY["lightweight"]


@pytest.mark.parametrize(
    ("source", "name", "form", "expected"),
    [
        ("files", "lightweight", "function", "use --witness-source offline with it"),
        ("agent", "static", "function", "use --witness-source offline with it"),
        ("files", "lightweight", "repository", "already runs every file"),
    ],
)
def test_a_source_that_does_not_serve_a_mode_is_one_error_naming_those_that_do(
    source: str, name: str, form: str, expected: str
) -> None:
    with pytest.raises(UsageError, match=expected):
        serves(source, mode(name, form), form)


def test_every_source_serves_per_trial_and_only_modes_of_its_form() -> None:
    for source in SOURCES.values():
        assert source.serves("per-trial", "function") and source.serves("per-trial", "repository")
        assert set(source.modes or ()) <= set(mode_names("function"))
        assert set(source.repo_modes or ()) <= set(mode_names("repository"))
        assert serves(source.name, mode("per-trial", "function"), "function") is source
    # The offline source serves every mode, so a new mode needs no change to the sources.
    assert SOURCES["offline"].modes is None and SOURCES["offline"].repo_modes is None
    assert serves("agent", mode("lightweight", "repository"), "repository") is SOURCES["agent"]
