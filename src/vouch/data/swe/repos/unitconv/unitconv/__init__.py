"""unitconv: parse, convert and format quantities of length, mass and time."""

from unitconv.convert import convert, convert_text
from unitconv.format import format_quantity
from unitconv.parse import parse_quantity
from unitconv.registry import UNITS, Unit, dimension_of, lookup

__all__ = [
    "UNITS",
    "Unit",
    "convert",
    "convert_text",
    "dimension_of",
    "format_quantity",
    "lookup",
    "parse_quantity",
]
