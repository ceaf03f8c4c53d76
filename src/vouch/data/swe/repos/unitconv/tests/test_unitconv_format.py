from unitconv import format_quantity


def test_short_form() -> None:
    assert format_quantity(3, "km") == "3 km"
    assert format_quantity(2.5, "kg") == "2.5 kg"


def test_long_form() -> None:
    assert format_quantity(1, "km", long=True) == "1 kilometre"
    assert format_quantity(5, "m", long=True) == "5 metres"
    assert format_quantity(1.5, "h", long=True) == "1.5 hours"
