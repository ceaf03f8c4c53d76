"""Price tables and harness configurations: defaults, files, and bad input in tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from vouch.agent import CONFIGS, load_config, load_prices
from vouch.errors import UsageError


def test_prices_match_the_longest_prefix_and_unknown_models_cost_none() -> None:
    table = load_prices()
    assert table.cost("openai/gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert table.cost("openai/gpt-4o", 1_000_000, 0) == pytest.approx(2.5)
    assert table.cost("openai/llama-local", 10, 10) is None


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_price_files_add_and_override(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"prices{suffix}"
    if suffix == ".toml":
        path.write_text(
            '[prices]\n"openai/llama-local" = {input = 0.0, output = 0.0}\n"openai/gpt-4o" = {input = 1, output = 2}\n'
        )
    else:
        path.write_text('{"openai/llama-local": {"input": 0, "output": 0}, "openai/gpt-4o": {"input": 1, "output": 2}}')
    table = load_prices(path)
    assert table.cost("openai/llama-local", 10, 10) == 0.0
    assert table.cost("openai/gpt-4o", 1_000_000, 1_000_000) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"openai/x" = 3', "must be {input"),
        ('"openai/x" = {input = 1}', "must be {input"),
        ('"openai/x" = {input = -1, output = 1}', "non-negative"),
        ('"openai/x" = {input = "1", output = 1}', "non-negative"),
        ("not toml [", "not valid TOML"),
    ],
)
def test_bad_price_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_prices(path)


def test_missing_price_file() -> None:
    with pytest.raises(UsageError, match="cannot read the price table"):
        load_prices(Path("/nonexistent/prices.toml"))


def test_builtin_configs_differ_in_what_the_paper_compares() -> None:
    assert {"default", "minimal", "effort-low", "effort-high", "with-challenger"} <= set(CONFIGS)
    assert CONFIGS["effort-low"].effort == "low" and CONFIGS["effort-high"].effort == "high"
    assert "challenge" in CONFIGS["with-challenger"].tools and "challenge" not in CONFIGS["default"].tools
    assert not {"run_python", "self_test", "run_public"} & set(CONFIGS["minimal"].tools)


def test_user_config_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "tight.toml"
    path.write_text('base = "effort-high"\ndescription = "tight budget"\n[budgets]\nexecutions = 5\nturns = 10\n')
    config = load_config(str(path))
    assert config.name == "tight" and config.effort == "high"
    assert config.budgets is not None and config.budgets.executions == 5 and config.budgets.wall_s == 5400.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('tools = ["read_file", "submit"]', "tools must include write_verifier"),
        ('tools = ["read_file", "write_verifier", "submit", "shell"]', "unknown tools"),
        ('effort = "extreme"', "effort 'extreme'"),
        ('base = "nope"', "base 'nope' is not a built-in"),
        ("surprise = 1", "field surprise"),
        ("[budgets]\nexecutions = 'many'", "field budgets.executions"),
    ],
)
def test_bad_user_configs(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_config(str(path))


def test_unknown_config_name_lists_the_builtin_ones() -> None:
    with pytest.raises(UsageError, match="built-in configs: default, minimal"):
        load_config("fancy")
