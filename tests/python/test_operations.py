"""The Python column of the operations table (tests/operations/operations.json): every
operation of pidguard has a Python name, and each resolves under ``pidguard``."""

import json
from pathlib import Path

import pidguard

TABLE = Path(__file__).resolve().parents[1] / "operations" / "operations.json"


def resolve(name):
    obj = pidguard
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_operation_has_a_python_name_that_exists():
    ops = json.loads(TABLE.read_text())["operations"]
    assert len(ops) >= 20
    missing = []
    for op in ops:
        name = op.get("python")
        try:
            assert name and callable(resolve(name))
        except (AttributeError, AssertionError):
            missing.append((op["op"], name))
    assert not missing, missing
