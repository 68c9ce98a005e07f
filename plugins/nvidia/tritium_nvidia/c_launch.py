"""The launch fast path's last step in C: write a kernel's parameter slots and call
``cuLaunchKernel`` in one call from Python.

The generated direct launcher (``launcher.py``) spends most of its own time in Python-level
work that a C function does in tens of nanoseconds: one ctypes ``.value`` store per parameter,
wrapping the stream for ``cuda.bindings`` and that binding's own argument conversion.  This
module builds (once per source and Python version, with the system C compiler, into Tritium's
cache directory) a small extension whose ``Launch`` objects do exactly those steps::

    claunch = Launch(cuLaunchKernel address, function_handle, block, shared, params_address,
                     (slot addresses), kinds)
    err = claunch(grid, stream, v0, v1, ...)      # 0: launched

``kinds`` has one letter per parameter: ``p`` a pointer (an address), ``i``/``u`` a 32-bit
integer slot (bools and 8/16-bit integers included), ``l``/``L`` 64-bit integers, ``f``/``d``
float and double.  The values go into the *same* ctypes slots the Python launcher uses, so
its retry and error paths see them.  ``grid`` is a tuple of one to three ints; anything else
returns -1 and leaves the launch to the Python path (as does any value that does not convert:
the Python path then reports it).  A positive result is the driver's error code, for the Python
path to handle.  The GIL is held from the first store to the driver's return: no other thread
can write the slots in between.

Without a C compiler or Python's headers, :func:`load` returns None and launches stay in Python
(``TRITIUM_CUDA_LAUNCH=bindings`` also keeps them there)."""
from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig
import threading

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);

#define MAX_PARAMS 256

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_fn launch;
    void *function;
    unsigned block, shared;
    void **params;
    Py_ssize_t n;
    char kinds[MAX_PARAMS];
    void *slots[MAX_PARAMS];
} Launch;

static int store(char kind, void *slot, PyObject *v) {
    switch (kind) {
    case 'p': {
        unsigned long long a = PyLong_AsUnsignedLongLong(v);
        if (a == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *(uint64_t *)slot = (uint64_t)a;
        return 0;
    }
    case 'i': case 'u': {
        long long a = PyLong_AsLongLong(v);
        if (a == -1 && PyErr_Occurred()) return -1;
        *(uint32_t *)slot = (uint32_t)(unsigned long long)a;
        return 0;
    }
    case 'l': {
        long long a = PyLong_AsLongLong(v);
        if (a == -1 && PyErr_Occurred()) return -1;
        *(int64_t *)slot = (int64_t)a;
        return 0;
    }
    case 'L': {
        unsigned long long a = PyLong_AsUnsignedLongLong(v);
        if (a == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *(uint64_t *)slot = (uint64_t)a;
        return 0;
    }
    case 'f': {
        double a = PyFloat_AsDouble(v);
        if (a == -1.0 && PyErr_Occurred()) return -1;
        *(float *)slot = (float)a;
        return 0;
    }
    case 'd': {
        double a = PyFloat_AsDouble(v);
        if (a == -1.0 && PyErr_Occurred()) return -1;
        *(double *)slot = a;
        return 0;
    }
    }
    return -1;
}

static int dim(PyObject *v, unsigned *out) {
    long a = PyLong_AsLong(v);
    if (a == -1 && PyErr_Occurred()) return -1;
    if (a < 0 || a > 0x7fffffffL) return -1;
    *out = (unsigned)a;
    return 0;
}

static PyObject *not_here(void) {  /* leave the launch to the Python path */
    PyErr_Clear();
    return PyLong_FromLong(-1);
}

static PyObject *launch_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kw) {
    Launch *self = (Launch *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kw != NULL || nargs != self->n + 2) {
        PyErr_SetString(PyExc_TypeError, "Launch(grid, stream, *values): wrong number of arguments");
        return NULL;
    }
    PyObject *grid = args[0];
    unsigned g[3] = {1, 1, 1};
    if (!PyTuple_CheckExact(grid)) return not_here();
    Py_ssize_t rank = PyTuple_GET_SIZE(grid);
    if (rank < 1 || rank > 3) return not_here();
    for (Py_ssize_t i = 0; i < rank; i++)
        if (dim(PyTuple_GET_ITEM(grid, i), &g[i])) return not_here();
    if (!g[0] || !g[1] || !g[2]) return not_here();
    void *stream = NULL;
    if (args[1] != Py_None) {
        unsigned long long s = PyLong_AsUnsignedLongLong(args[1]);
        if (s == (unsigned long long)-1 && PyErr_Occurred()) return not_here();
        stream = (void *)(uintptr_t)s;
    }
    for (Py_ssize_t i = 0; i < self->n; i++)
        if (store(self->kinds[i], self->slots[i], args[2 + i])) return not_here();
    int err = self->launch(self->function, g[0], g[1], g[2], self->block, 1, 1, self->shared, stream,
                           self->params, NULL);
    return PyLong_FromLong(err);
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    unsigned long long fn, function, params;
    unsigned block, shared;
    PyObject *slots;
    const char *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(args, "KKIIKO!s#", &fn, &function, &block, &shared, &params, &PyTuple_Type, &slots,
                          &kinds, &nkinds))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    if (n != nkinds || n > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "one kind per slot, at most 256");
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = launch_call;
    self->launch = (launch_fn)(uintptr_t)fn;
    self->function = (void *)(uintptr_t)function;
    self->block = block;
    self->shared = shared;
    self->params = (void **)(uintptr_t)params;
    self->n = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        char k = kinds[i];
        if (!strchr("piulLfd", k)) {
            Py_DECREF(self);
            PyErr_Format(PyExc_ValueError, "unknown parameter kind %c", k);
            return NULL;
        }
        self->kinds[i] = k;
        self->slots[i] = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(slots, i));
        if (PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritium_claunch.Launch",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = launch_new,
    .tp_doc = "Launch(cuLaunchKernel address, function, block, shared, params address, slot addresses, kinds)",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritium_claunch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__tritium_claunch(void) {
    if (PyType_Ready(&LaunchType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&LaunchType);
    if (PyModule_AddObject(m, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(&LaunchType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""

#: the ctypes type of a parameter slot (``launcher.ParamBuffer``, which says which slot a
#: signature type takes) -> the kind letter the C function writes it as
SLOT_KINDS = {ctypes.c_void_p: "p", ctypes.c_int32: "i", ctypes.c_uint32: "u", ctypes.c_int64: "l",
              ctypes.c_uint64: "L", ctypes.c_float: "f", ctypes.c_double: "d"}

_lock = threading.Lock()
_module: list = []   # [module or None] once tried


def _build(directory: str) -> str | None:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    include = sysconfig.get_paths().get("include")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    digest = hashlib.sha256((SOURCE + suffix + include).encode()).hexdigest()[:16]
    out_dir = os.path.join(directory, "c_launch", digest)
    path = os.path.join(out_dir, "_tritium_claunch" + suffix)
    if os.path.exists(path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(out_dir, f"claunch.{os.getpid()}.c")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(src, "w") as f:
        f.write(SOURCE)
    try:
        proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", tmp, src],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            return None
        os.replace(tmp, path)   # atomic: a concurrent builder's identical file may win
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for p in (src, tmp):
            if os.path.exists(p):
                os.remove(p)
    return path


def load():
    """The extension module, built on first use; None where it cannot be (no compiler, no Python
    headers, a failed build or import), or when ``TRITIUM_CUDA_LAUNCH`` asks for a Python launch
    path."""
    if os.environ.get("TRITIUM_CUDA_LAUNCH", "c") != "c":
        return None
    if _module:
        return _module[0]
    with _lock:
        if not _module:
            mod = None
            try:
                from tritium.runtime.cache import cache_dir
                path = _build(str(cache_dir()))
                if path is not None:
                    loader = importlib.machinery.ExtensionFileLoader("_tritium_claunch", path)
                    spec = importlib.util.spec_from_file_location("_tritium_claunch", path, loader=loader)
                    mod = importlib.util.module_from_spec(spec)
                    loader.exec_module(mod)
            except (OSError, ImportError):
                mod = None
            _module.append(mod)
    return _module[0]
