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


REPORTS = Path(__file__).resolve().parents[1] / "operations" / "reports.json"
STUBS = Path(pidguard.__file__).resolve().parent / "_pidguard.pyi"
# Attributes a report class has besides its fields: methods, and the one Python-only value.
NOT_FIELDS = {"to_dict", "finalize_exception"}


def class_fields(cls):
    return [n for n, v in vars(cls).items() if not n.startswith("_") and n not in NOT_FIELDS]


def stub_fields(name):
    import ast

    tree = ast.parse(STUBS.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return [
        f.name
        for f in cls.body
        if isinstance(f, ast.FunctionDef) and any(getattr(d, "id", None) == "property" for d in f.decorator_list)
    ]


def test_every_report_class_has_exactly_the_fields_core_describes():
    """Each report is one struct in core (``pidguard::report``); the Python class, its stub and
    core's table must name the same fields (the stub in the same order)."""
    reports = json.loads(REPORTS.read_text())["reports"]
    assert len(reports) == 7
    for name, fields in reports.items():
        cls = getattr(pidguard, name)
        assert sorted(class_fields(cls)) == sorted(fields), name
        assert stub_fields(name) == fields, f"{name} in _pidguard.pyi"


def test_a_report_dict_holds_exactly_the_fields(tmp_path):
    c = pidguard.check_pid_file(tmp_path / "missing.pid")
    assert list(c.to_dict()) == json.loads(REPORTS.read_text())["reports"]["PidFileCheck"]
    assert repr(c) == "PidFileCheck(valid=False, reason='missing', pid=None)" and not c


def test_mode_is_the_permission_bits_in_both_formats(tmp_path):
    import os
    import time

    abx = tmp_path / "abx.pid"
    pidguard.write_pid_file_with_mtime(abx, os.getpid(), time.time())
    c = pidguard.check_pid_file(abx)
    assert c.mode == os.stat(abx).st_mode & 0o7777 and c.owner_uid == os.getuid()


def test_reports_compare_by_value(tmp_path):
    p = tmp_path / "missing.pid"
    assert pidguard.check_pid_file(p) == pidguard.check_pid_file(p)
