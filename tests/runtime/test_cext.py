"""``runtime/cext.py``: small extensions built with the system compiler into the cache directory,
C or C++, the first flag set that compiles, and a failed build remembered so that later processes
do not try again."""
import shutil
import subprocess

import pytest

from tritium.runtime import cext

C_SOURCE = r"""
#include <Python.h>
static PyObject *answer(PyObject *m, PyObject *a) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "%s", NULL, -1, methods};
PyMODINIT_FUNC PyInit_%s(void) { return PyModule_Create(&module); }
"""


def source(name: str) -> str:
    return C_SOURCE % (name, name)


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cext, "_loaded", {})
    monkeypatch.setattr(cext, "_locks", {})


needs_cc = pytest.mark.skipif(cext._compiler(False) is None, reason="no C compiler here")
needs_cxx = pytest.mark.skipif(cext._compiler(True) is None, reason="no C++ compiler here")


@needs_cc
def test_builds_imports_and_caches(tmp_path):
    assert not cext.built("_tritium_test_a", source("_tritium_test_a"))
    mod = cext.load("_tritium_test_a", source("_tritium_test_a"))
    assert mod.answer() == 42
    assert cext.built("_tritium_test_a", source("_tritium_test_a"))
    assert cext.load("_tritium_test_a", source("_tritium_test_a")) is mod
    assert list(tmp_path.rglob("_tritium_test_a*.so")) and not list(tmp_path.rglob("*.tmp"))


@needs_cxx
def test_cxx_takes_the_first_flag_set_that_compiles():
    src = source("_tritium_test_b").replace("static PyObject *answer", "extern \"C\" PyObject *answer") \
        + "\nstatic_assert(__cplusplus >= 201703L, \"C++17\");\n"
    mod = cext.load("_tritium_test_b", src, cxx=True, flag_sets=(("-std=c++11",), ("-std=c++17",)))
    assert mod is not None and mod.answer() == 42


@needs_cc
def test_a_failed_build_is_remembered(tmp_path, monkeypatch):
    bad = source("_tritium_test_c") + "\nthis is not C;\n"
    assert cext.load("_tritium_test_c", bad) is None
    failed = list(tmp_path.rglob("*.failed"))
    assert len(failed) == 1 and "error" in failed[0].read_text()
    # another process (a fresh table of loaded modules) does not run the compiler again
    monkeypatch.setattr(cext, "_loaded", {})

    def no_compiler(*a, **k):
        raise AssertionError("the compiler ran again")
    monkeypatch.setattr(subprocess, "run", no_compiler)
    assert cext.load("_tritium_test_c", bad) is None


def test_no_compiler_no_module(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert not cext.built("_tritium_test_d", source("_tritium_test_d"))
    assert cext.load("_tritium_test_d", source("_tritium_test_d")) is None
    assert cext.built("_tritium_test_d", source("_tritium_test_d"))  # tried: load answers at once
