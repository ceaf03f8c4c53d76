"""Writing quantities for people: ``3 km`` or, in long form, ``3 kilometres``."""

from unitconv.registry import lookup

NAMES: dict[str, tuple[str, str]] = {
    "mm": ("millimetre", "millimetres"),
    "cm": ("centimetre", "centimetres"),
    "m": ("metre", "metres"),
    "km": ("kilometre", "kilometres"),
    "g": ("gram", "grams"),
    "kg": ("kilogram", "kilograms"),
    "t": ("tonne", "tonnes"),
    "s": ("second", "seconds"),
    "min": ("minute", "minutes"),
    "h": ("hour", "hours"),
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def format_quantity(value: float, unit: str, long: bool = False) -> str:
    """``"<value> <symbol>"``, or with ``long`` the unit's name, singular only for exactly 1."""
    lookup(unit)
    if not long:
        return f"{_number(value)} {unit}"
    singular, plural = NAMES.get(unit, (unit, unit))
    return f"{_number(value)} {singular if value == 1 else plural}"
