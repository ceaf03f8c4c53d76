"""Reading quantities written as text, e.g. ``"3.5 km"`` or ``"12kg"``."""

import re

from unitconv.registry import UNITS

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def _pattern() -> re.Pattern[str]:
    # Longest symbols first, so that "min" is not read as "m" followed by "in".
    symbols = sorted(UNITS, key=len, reverse=True)
    return re.compile(rf"^\s*({_NUMBER})\s*({'|'.join(map(re.escape, symbols))})\s*$")


def parse_quantity(text: str) -> tuple[float, str]:
    """The value and unit symbol of a quantity; ValueError when the text is not one."""
    match = _pattern().match(text)
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)), match.group(2)
