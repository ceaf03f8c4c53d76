import pytest

from unitconv import convert, convert_text, parse_quantity


def test_convert_length() -> None:
    assert convert(2.5, "km", "m") == pytest.approx(2500.0)
    assert convert(30, "cm", "m") == pytest.approx(0.3)


def test_convert_across_dimensions_fails() -> None:
    with pytest.raises(ValueError):
        convert(1, "kg", "m")


def test_parse_quantity() -> None:
    assert parse_quantity("3.5 km") == (3.5, "km")
    assert parse_quantity("12kg") == (12.0, "kg")
    assert parse_quantity("5 min") == (5.0, "min")
    with pytest.raises(ValueError):
        parse_quantity("3 parsecs")


def test_convert_text() -> None:
    assert convert_text("90 min", "h") == pytest.approx(1.5)
