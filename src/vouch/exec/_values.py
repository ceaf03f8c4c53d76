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


class DataError(ValueError):
    """What a run sent back is not data ``to_data`` could have produced (a forged or broken record)."""


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_DECODE_DEPTH = 2 * _MAX_DEPTH + 2
"""A tagged dict takes two levels of JSON (its items and each pair) for one of ``to_data``'s."""


def decode(data: Any) -> Any:
    """Decode what ``to_data`` produced, strictly: the inverse of ``to_data`` and nothing more.

    Total and bounded: any JSON document gives a value or raises ``DataError`` (never another
    exception), nesting is capped, each node is visited once, and nothing is executed.
    """
    try:
        return _decode(data, 0, True)
    except DataError:
        raise
    except (TypeError, ValueError, RecursionError, OverflowError) as exc:
        raise DataError(f"{type(exc).__name__}: {exc}"[:300]) from None


def from_data(data: Any) -> Any:
    """Decode what ``to_data`` produced, leniently: a tagged node that is not well-formed, or
    nesting past the cap, stays as the JSON it is. Total (never raises) and bounded.

    For a run's own result the pool uses ``decode``, which refuses what is not well-formed;
    this is for data nested in such a result (rows a run encoded once more), where a row the
    run got wrong must stay that row's outcome.
    """
    try:
        return _decode(data, 0, False)
    except (DataError, TypeError, ValueError, RecursionError, OverflowError):
        return data


def _decode(data: Any, depth: int, strict: bool) -> Any:
    if data is None or type(data) in (bool, int, float, str):
        return data
    if depth > _DECODE_DEPTH:
        if strict:
            raise DataError(f"data nested deeper than {_DECODE_DEPTH} levels")
        return data
    if type(data) is list:
        return [_decode(v, depth + 1, strict) for v in data]
    if type(data) is not dict:
        if strict:
            raise DataError(f"a value of type {type(data).__name__} is not JSON data")
        return data
    if _TAG not in data:
        return {k: _decode(v, depth + 1, strict) for k, v in data.items()}
    try:
        return _tagged(data, depth, strict)
    except DataError:
        if strict:
            raise
        return data


def _items(data: dict[str, Any], depth: int, strict: bool) -> list[Any]:
    items = data.get("items")
    if type(items) is not list or set(data) != {_TAG, "items"}:
        raise DataError(f"a tagged {data[_TAG]!r} needs exactly an 'items' list"[:200])
    return [_decode(v, depth + 1, strict) for v in items]


def _tagged(data: dict[str, Any], depth: int, strict: bool) -> Any:
    tag = data[_TAG]
    if tag == "tuple":
        return tuple(_items(data, depth, strict))
    if tag in ("set", "frozenset"):
        items = _items(data, depth, strict)
        try:
            return set(items) if tag == "set" else frozenset(items)
        except TypeError:
            raise DataError(f"a tagged {tag} holds unhashable items") from None
    if tag == "bytes":
        b64 = data.get("b64")
        if type(b64) is not str or set(data) != {_TAG, "b64"}:
            raise DataError("tagged bytes need exactly a 'b64' string")
        try:
            return base64.b64decode(b64, validate=True)
        except ValueError as exc:
            raise DataError(f"tagged bytes are not base64: {exc}") from None
    if tag == "float":
        text = data.get("repr")
        if type(text) is not str or text not in _FLOATS or set(data) != {_TAG, "repr"}:
            raise DataError(f"a tagged float must be nan, inf or -inf, not {text!r}"[:200])
        return _FLOATS[text]
    if tag == "dict":
        out = {}
        for pair in _items(data, depth, strict):
            if type(pair) is not list or len(pair) != 2:
                raise DataError("a tagged dict's items must be [key, value] pairs")
            try:
                out[pair[0]] = pair[1]
            except TypeError:
                raise DataError(f"a tagged dict has an unhashable key of type {type(pair[0]).__name__}") from None
        return out
    raise DataError(f"unknown tag {tag!r}"[:200])
