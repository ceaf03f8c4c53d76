"""The unit registry: every unit's symbol, dimension and size in SI base units."""

from typing import NamedTuple


class Unit(NamedTuple):
    symbol: str
    dimension: str
    factor: float
    """Size of one unit in the SI base unit of its dimension (metre, kilogram, second)."""


UNITS: dict[str, Unit] = {
    unit.symbol: unit
    for unit in (
        Unit("mm", "length", 0.001),
        Unit("cm", "length", 0.01),
        Unit("m", "length", 1.0),
        Unit("km", "length", 1000.0),
        Unit("g", "mass", 0.001),
        Unit("kg", "mass", 1.0),
        Unit("t", "mass", 1000.0),
        Unit("s", "time", 1.0),
        Unit("min", "time", 60.0),
        Unit("h", "time", 3600.0),
    )
}


def lookup(symbol: str) -> Unit:
    """The unit with this symbol (case-sensitive); an unknown symbol is a KeyError naming it."""
    try:
        return UNITS[symbol]
    except KeyError:
        raise KeyError(f"unknown unit {symbol!r}") from None


def dimension_of(symbol: str) -> str:
    """The dimension (length, mass or time) of a unit."""
    return lookup(symbol).dimension
