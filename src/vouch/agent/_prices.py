"""Cost of model tokens: a small default price table, overridable from a TOML or JSON file.

Prices are US dollars per million tokens, input and output apart. A model matches the
longest table key that its name starts with (``gpt-4o-mini-2024-07-18`` matches
``gpt-4o-mini``), so dated snapshots need no entry of their own. A model with no price has a
cost of None (unknown), never 0.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vouch.errors import UsageError


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float


DEFAULT_PRICES: dict[str, Price] = {
    "openai/gpt-4o-mini": Price(0.15, 0.60),
    "openai/gpt-4o": Price(2.50, 10.00),
    "openai/gpt-4.1-nano": Price(0.10, 0.40),
    "openai/gpt-4.1-mini": Price(0.40, 1.60),
    "openai/gpt-4.1": Price(2.00, 8.00),
    "openai/o3-mini": Price(1.10, 4.40),
    "openai/o4-mini": Price(1.10, 4.40),
    "openai/o3": Price(2.00, 8.00),
    "openai/gpt-5-mini": Price(0.25, 2.00),
    "openai/gpt-5": Price(1.25, 10.00),
    "anthropic/claude-3-5-haiku": Price(0.80, 4.00),
    "anthropic/claude-haiku-4": Price(1.00, 5.00),
    "anthropic/claude-sonnet-4": Price(3.00, 15.00),
    "anthropic/claude-opus-4": Price(15.00, 75.00),
}
"""Defaults (list prices when written); a local server's model is free only if you say so."""


@dataclass(frozen=True)
class PriceTable:
    """Prices by ``provider/model`` prefix."""

    prices: Mapping[str, Price]

    def price(self, model: str) -> Price | None:
        matches = [key for key in self.prices if model.startswith(key)]
        return self.prices[max(matches, key=len)] if matches else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Dollars for these tokens, or None when the model has no price."""
        price = self.price(model)
        if price is None:
            return None
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {k: {"input": v.input, "output": v.output} for k, v in sorted(self.prices.items())}


def _parse(data: Any, path: Path) -> dict[str, Price]:
    table = data.get("prices", data) if isinstance(data, dict) else data
    if not isinstance(table, dict):
        raise UsageError(f"{path}: a price table is an object of 'provider/model' -> {{input, output}}")
    out = {}
    for model, entry in table.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise UsageError(
                f"{path}: prices[{model!r}] must be {{input = <$/Mtoken>, output = <$/Mtoken>}}, got {entry!r}"
            )
        values = [entry["input"], entry["output"]]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in values):
            raise UsageError(f"{path}: prices[{model!r}] must hold non-negative numbers, got {entry!r}")
        out[str(model)] = Price(float(entry["input"]), float(entry["output"]))
    return out


def load_prices(path: Path | None = None) -> PriceTable:
    """The default table, with the entries of ``path`` (TOML or JSON) added or replacing.

    Raises:
        UsageError: the file cannot be read or an entry is malformed (the message names it).
    """
    prices = dict(DEFAULT_PRICES)
    if path is None:
        return PriceTable(prices)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read the price table {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from None
    prices.update(_parse(data, path))
    return PriceTable(prices)
