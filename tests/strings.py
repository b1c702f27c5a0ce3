"""A helper shared by the escaping tests."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def all_strings(obj: Any) -> Iterator[str]:
    """Every string inside nested dicts (keys included), lists and tuples."""
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
