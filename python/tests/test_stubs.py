"""The type stubs name exactly the native module's public API."""

import ast
import pathlib

import instinfer
from instinfer import _native

STUBS = pathlib.Path(instinfer.__file__).with_name("_native.pyi")


def stub_names():
    tree = ast.parse(STUBS.read_text())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("__")
            } | {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
    return top - {"Array", "Report"}, classes


def test_stubs_name_the_native_api():
    top, classes = stub_names()
    public = {n for n in dir(_native) if not n.startswith("_")} | {"__version__"}
    assert top == public, (top ^ public)
    assert set(instinfer.__all__) == public
    for cls in ("Device", "Pending"):
        have = {n for n in dir(getattr(_native, cls)) if not n.startswith("_")}
        assert classes[cls] == have, (cls, classes[cls] ^ have)
