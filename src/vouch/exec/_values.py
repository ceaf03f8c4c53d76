"""Python values <-> JSON data, for what crosses a sandbox boundary.

JSON alone loses types a comparison depends on (``(1, 2) != [1, 2]``). A few containers are
tagged: ``{"__vouch__": "tuple", "items": [...]}`` and likewise ``set``, ``frozenset``,
``bytes`` (base64) and dicts whose keys are not all strings. Anything else that is not
plain data raises ``TypeError``: an object never crosses, only data does, and decoding
never executes anything.
"""

from __future__ import annotations

import base64
import math
from typing import Any

_TAG = "__vouch__"
_MAX_DEPTH = 200


def to_data(value: Any, _depth: int = 0) -> Any:
    """Encode ``value`` as JSON data; raises TypeError for what is not plain data."""
    if _depth > _MAX_DEPTH:
        raise TypeError("value nested too deeply")
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {_TAG: "float", "repr": repr(value)}
    if type(value) is list:
        return [to_data(v, _depth + 1) for v in value]
    if type(value) is tuple:
        return {_TAG: "tuple", "items": [to_data(v, _depth + 1) for v in value]}
    if type(value) in (set, frozenset):
        items = [to_data(v, _depth + 1) for v in value]
        items.sort(key=repr)
        return {_TAG: type(value).__name__, "items": items}
    if type(value) is bytes:
        return {_TAG: "bytes", "b64": base64.b64encode(value).decode()}
    if type(value) is dict:
        if all(type(k) is str for k in value) and _TAG not in value:
            return {k: to_data(v, _depth + 1) for k, v in value.items()}
        return {_TAG: "dict", "items": [[to_data(k, _depth + 1), to_data(v, _depth + 1)] for k, v in value.items()]}
    raise TypeError(f"a value of type {type(value).__name__} is not data")


def from_data(data: Any, _depth: int = 0) -> Any:
    """Decode what ``to_data`` produced; unknown tags stay as they are."""
    if _depth > _MAX_DEPTH:
        raise ValueError("data nested too deeply")
    if isinstance(data, list):
        return [from_data(v, _depth + 1) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(_TAG)
    if tag is None:
        return {k: from_data(v, _depth + 1) for k, v in data.items()}
    if tag == "tuple":
        return tuple(from_data(v, _depth + 1) for v in data.get("items", []))
    if tag in ("set", "frozenset"):
        items = [from_data(v, _depth + 1) for v in data.get("items", [])]
        try:
            return set(items) if tag == "set" else frozenset(items)
        except TypeError:
            return items
    if tag == "bytes":
        return base64.b64decode(data.get("b64", ""))
    if tag == "float":
        return float(data.get("repr", "nan"))
    if tag == "dict":
        try:
            return {from_data(k, _depth + 1): from_data(v, _depth + 1) for k, v in data.get("items", [])}
        except TypeError:
            return data
    return data
