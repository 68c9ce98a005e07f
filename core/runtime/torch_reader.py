"""torch tensors' address, dtype and device read in C++, for the C binder (``c_binder.py``).

Each tensor argument of a launch costs the binder three calls into torch: ``data_ptr()``,
``dtype`` and ``get_device()``.  Through Python's C API each is a method or attribute lookup
and torch's argument handling, about 40 ns on a fast core and 100 ns on a GPU host's; for three
tensors that is most of what a launch costs above the driver's own call.  Read through torch's
C++ API (``THPVariable_Unpack``) the three take a few nanoseconds.

This module builds (with the system C++ compiler, against the running torch's headers and
libraries, into Tritium's cache directory, once per torch and compiler) an extension whose
``READ`` is the address of::

    int read_tensor(PyObject *v, unsigned long long *address, PyObject **dtype, long *device)

It answers (0) only for objects whose type is exactly ``torch.Tensor`` or ``torch.nn.Parameter``
while no torch-function mode is active, when torch itself would answer the three calls without
calling any Python code, with the same values (``dtype`` borrowed); for anything else, or if
torch raises, it returns 1 and the binder makes the calls through Python as before.

The build takes seconds, so no launch waits for it: :func:`install` starts it on a daemon thread
the first time a C binder is made in a process where it is not built yet, and the binder uses the
reader from the moment it is ready.  ``TRITIUM_TORCH_READER=0`` turns it off; with no C++
compiler or no torch headers it is simply never used.  :func:`wait` is for benchmarks and tests
that must measure the steady state."""
from __future__ import annotations

import os
import sys
import threading
from . import cext
from .. import knobs

NAME = "_tritium_torch_reader"

SOURCE = r"""
#include <Python.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>
#include <stdint.h>

static PyTypeObject *accepted[4];
static int naccepted;

extern "C" int tritium_read_tensor(PyObject *v, unsigned long long *address, PyObject **dtype, long *device) {
    PyTypeObject *type = Py_TYPE(v);
    int ok = type == (PyTypeObject *)THPVariableClass;
    for (int i = 0; !ok && i < naccepted; i++) ok = type == accepted[i];
    if (!ok) return 1;
    try {
        if (at::impl::torch_function_mode_enabled()) return 1;
        const at::Tensor &t = THPVariable_Unpack(v);
        PyObject *d = (PyObject *)torch::getTHPDtype(t.scalar_type());
        if (d == NULL) return 1;
        *address = (unsigned long long)(uintptr_t)t.data_ptr();
        *dtype = d;
        *device = (long)t.get_device();
        return 0;
    } catch (...) {
        return 1;
    }
}

/* read(t) -> (address, dtype, device), or None where the binder would ask through Python */
static PyObject *read(PyObject *, PyObject *v) {
    unsigned long long a;
    PyObject *d;
    long dev;
    if (tritium_read_tensor(v, &a, &d, &dev)) Py_RETURN_NONE;
    return Py_BuildValue("(KOl)", a, d, dev);
}

/* accept(type): objects of exactly this type (a torch.Tensor subclass that does not override
   torch's calls, such as torch.nn.Parameter) are read too */
static PyObject *accept(PyObject *, PyObject *t) {
    if (!PyType_Check(t) || naccepted == 4) {
        PyErr_SetString(PyExc_TypeError, "accept(type): a type, at most four");
        return NULL;
    }
    Py_INCREF(t);
    accepted[naccepted++] = (PyTypeObject *)t;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"read", (PyCFunction)read, METH_O, "read(t) -> (address, dtype, device) or None"},
    {"accept", (PyCFunction)accept, METH_O, "accept(type)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritium_torch_reader", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tritium_torch_reader(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObject(m, "READ", PyLong_FromVoidPtr((void *)&tritium_read_tensor)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""

_state = {"thread": None, "module": None, "done": threading.Event(), "targets": []}
_lock = threading.Lock()


def build_options(torch) -> dict | None:
    """``cext.load``'s options for the running torch: its headers, its libraries (linked with
    their directory as the run path, so the loaded copies are the ones used), its C++ ABI; None
    where the wheel carries no headers."""
    root = os.path.dirname(torch.__file__)
    include, lib = os.path.join(root, "include"), os.path.join(root, "lib")
    if not os.path.exists(os.path.join(include, "torch", "csrc", "autograd", "python_variable.h")):
        return None
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    libs = [f"-l{n}" for n in ("torch_python", "torch", "torch_cpu", "c10")
            if os.path.exists(os.path.join(lib, f"lib{n}.so"))]
    flags = (f"-I{include}", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w", f"-L{lib}", *libs, f"-Wl,-rpath,{lib}",
             f"-DTRITIUM_TORCH_VERSION={torch.__version__}")  # a new torch in the same place: a new build
    return {"cxx": True, "flags": flags, "flag_sets": (("-std=c++17",), ("-std=c++20",))}


def _ready(module) -> None:
    with _lock:
        _state["module"] = module
        targets = list(_state["targets"])
    for set_reader in targets:
        set_reader(module.READ if module is not None else 0)
    _state["done"].set()


def _load(torch, options) -> None:
    module = None
    try:
        module = cext.load(NAME, SOURCE, **options)
        if module is not None:
            module.accept(torch.nn.Parameter)
    except Exception:   # noqa: BLE001 - any failure leaves the binder on its Python calls
        module = None
    _ready(module)


def install(set_reader) -> None:
    """Hand the reader's address to ``set_reader`` (the C binder module's ``set_tensor_reader``)
    now if it is built, else once a background build finishes; nothing where it cannot be."""
    if not knobs.runtime.torch_reader:  # TRITIUM_TORCH_READER=0
        return
    torch = sys.modules.get("torch")
    if torch is None:
        return
    with _lock:
        if set_reader in _state["targets"]:
            return
        _state["targets"].append(set_reader)
        started = _state["thread"] is not None
        module = _state["module"]
        if not started:
            options = build_options(torch)
            if options is None:
                _state["done"].set()
                return
            if cext.built(NAME, SOURCE, **options):
                _state["thread"] = threading.current_thread()
                started = None   # built: load it here, now
            else:
                _state["thread"] = threading.Thread(target=_load, args=(torch, options),
                                                    name="tritium torch reader build", daemon=True)
    if started is None:
        _load(torch, options)
    elif not started:
        _state["thread"].start()
    elif module is not None:   # built before this binder asked: _ready has run without it
        set_reader(module.READ)


def wait(timeout: float | None = None) -> bool:
    """Wait for a build :func:`install` started; True when the reader is in use."""
    if _state["thread"] is None:
        return False
    _state["done"].wait(timeout)
    return _state["module"] is not None


def module():
    """The built extension (``read(t)`` for tests), or None."""
    return _state["module"]
