"""Converting between units of one dimension."""

from unitconv.parse import parse_quantity
from unitconv.registry import lookup


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``; ValueError across dimensions."""
    source = lookup(from_unit)
    target = lookup(to_unit)
    if source.dimension != target.dimension:
        raise ValueError(f"cannot convert {source.dimension} ({from_unit}) to {target.dimension} ({to_unit})")
    return value * source.factor / target.factor


def convert_text(text: str, to_unit: str) -> float:
    """Parse ``text`` as a quantity and convert it to ``to_unit``."""
    value, unit = parse_quantity(text)
    return convert(value, unit, to_unit)
