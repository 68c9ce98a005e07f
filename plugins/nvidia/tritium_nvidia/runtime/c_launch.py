"""The launch fast path's last step in C: check the thread and device, ask the stream, write a
kernel's parameter slots and call ``cuLaunchKernel``, in one call from Python.

The generated direct launcher (``launcher.py``) spends most of its own time in Python-level
work that a C function does in tens of nanoseconds: one ctypes ``.value`` store per parameter,
wrapping the stream for ``cuda.bindings`` and that binding's own argument conversion.  This
module builds (once per source and Python version, with the system C compiler, into Tritium's
cache directory) a small extension.  A ``Launch`` holds one kernel's launch constants and slots::

    claunch = Launch(cuLaunchKernel address, function_handle, block, shared, params_address,
                     (slot addresses), kinds[, cuLaunchKernelEx address, pair_above])

(with the last two, a grid of an even x size and more than ``pair_above`` programs launches
through ``cuLaunchKernelEx`` as clusters of two CTAs along x, as ``launcher.py``'s Python path does)

and a ``Direct`` is the fast path's whole direct launcher (``launcher.build_direct``) around one::

    direct = Direct(claunch, slow, positions, arity, owner, queries.NAMESPACE, device)
    direct(grid, v0, ..., v{arity-1})             # None: launched

It does the Python launcher's checks in C: the calling thread owns the slots (``owner[0]``),
``device`` is current (``NAMESPACE["current_device"]()``), its stream
(``NAMESPACE["stream_of"](device)``); then writes ``v[positions[k]]`` into slot ``k`` and launches.
Anything it cannot take (another thread or device, a value, a grid, a driver error) goes to
``slow(grid, v0, ...)``, the Python launcher, which handles or reports it.  One Python frame and
its bytecode less on every launch.

``kinds`` has one letter per parameter: ``p`` a pointer (an address), ``i``/``u`` a 32-bit
integer slot (bools and 8/16-bit integers included), ``l``/``L`` 64-bit integers, ``f``/``d``
float and double.  The values go into the *same* ctypes slots the Python launcher uses, so
its retry and error paths see them.  ``grid`` is a tuple of one to three ints; anything else,
and any value that does not convert, leaves the launch to the Python path, which reports it, as
it does the driver's errors.  The GIL is held from the first store to the driver's return: no
other thread can write the slots in between.

Without a C compiler or Python's headers, :func:`load` returns None and launches stay in Python
(``TRITIUM_CUDA_LAUNCH=bindings`` also keeps them there)."""
from __future__ import annotations

import ctypes
import os

from tritium import knobs
from tritium.runtime import cext


SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);

/* cuLaunchKernelEx's configuration and one launch attribute, as cuda.h lays them out
   (CUlaunchConfig, CUlaunchAttribute: a 4-byte id, padding to 8, a 64-byte value). */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        struct { unsigned x, y, z; } cluster_dim;
    } value;
} launch_attr;

typedef struct {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared;
    void *stream;
    launch_attr *attrs;
    unsigned n_attrs;
} launch_config;

typedef int (*launch_ex_fn)(const launch_config *, void *, void **, void **);

#define ATTRIBUTE_CLUSTER_DIMENSION 4

#define MAX_PARAMS 256

typedef struct {
    PyObject_HEAD
    launch_fn launch;
    void *function;
    unsigned block, shared;
    void **params;
    launch_ex_fn launch_ex;           /* NULL: never paired */
    unsigned long long pair_above;    /* pair grids of an even x and more programs than this */
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

/* Write slot k from values[positions[k]] and launch on grid and stream: -1 where the Python path
   has to (error cleared), else the driver's result. */
static int launch_values(Launch *self, PyObject *grid, PyObject *stream_obj, PyObject *const *values,
                         const Py_ssize_t *positions) {
    unsigned g[3] = {1, 1, 1};
    if (!PyTuple_CheckExact(grid)) return -1;
    Py_ssize_t rank = PyTuple_GET_SIZE(grid);
    if (rank < 1 || rank > 3) return -1;
    for (Py_ssize_t i = 0; i < rank; i++)
        if (dim(PyTuple_GET_ITEM(grid, i), &g[i])) { PyErr_Clear(); return -1; }
    if (!g[0] || !g[1] || !g[2]) return -1;
    void *stream = NULL;
    if (stream_obj != Py_None) {
        unsigned long long s = PyLong_AsUnsignedLongLong(stream_obj);
        if (s == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
        stream = (void *)(uintptr_t)s;
    }
    for (Py_ssize_t i = 0; i < self->n; i++)
        if (store(self->kinds[i], self->slots[i], values[positions[i]])) {
            PyErr_Clear();
            return -1;
        }
    if (self->launch_ex != NULL && !(g[0] & 1) &&
        (unsigned long long)g[0] * g[1] * g[2] > self->pair_above) {
        /* programs 2i and 2i+1 as one cluster of two CTAs */
        launch_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.id = ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.cluster_dim.x = 2;
        attr.value.cluster_dim.y = 1;
        attr.value.cluster_dim.z = 1;
        launch_config config = {g[0], g[1], g[2], self->block, 1, 1, self->shared, stream, &attr, 1};
        return self->launch_ex(&config, self->function, self->params, NULL);
    }
    return self->launch(self->function, g[0], g[1], g[2], self->block, 1, 1, self->shared, stream,
                        self->params, NULL);
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    unsigned long long fn, function, params, fn_ex = 0, pair_above = 0;
    unsigned block, shared;
    PyObject *slots;
    const char *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(args, "KKIIKO!s#|KK", &fn, &function, &block, &shared, &params, &PyTuple_Type, &slots,
                          &kinds, &nkinds, &fn_ex, &pair_above))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    if (n != nkinds || n > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "one kind per slot, at most 256");
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->launch = (launch_fn)(uintptr_t)fn;
    self->function = (void *)(uintptr_t)function;
    self->block = block;
    self->shared = shared;
    self->params = (void **)(uintptr_t)params;
    self->launch_ex = (launch_ex_fn)(uintptr_t)fn_ex;
    self->pair_above = pair_above;
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
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = launch_new,
    .tp_doc = "Launch(cuLaunchKernel address, function, block, shared, params address, slot addresses, kinds"
              "[, cuLaunchKernelEx address, pair_above])",
};

/* The fast path's whole direct launcher: direct(grid, v0, ..., v{arity-1}).  On the slots' owner
   thread, with the device current, it asks the stream, writes the slots and launches; anything
   else (another thread, another device, a value or grid it cannot take, a driver error) goes to
   slow(grid, v0, ...), the Python launcher, which handles or reports it. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;
    Launch *launch;
    PyObject *slow, *owner, *queries, *device;
    long device_index;
    Py_ssize_t arity;
    Py_ssize_t positions[MAX_PARAMS];
} Direct;

static PyObject *str_stream_of, *str_current_device;

static PyObject *direct_slow(Direct *self, PyObject *const *args, size_t nargsf, PyObject *kw) {
    return PyObject_Vectorcall(self->slow, args, nargsf, kw);
}

static PyObject *direct_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kw) {
    Direct *self = (Direct *)self_;
    if (kw != NULL || PyVectorcall_NARGS(nargsf) != self->arity + 1) return direct_slow(self, args, nargsf, kw);
    PyObject *owner = PyList_GET_SIZE(self->owner) ? PyList_GET_ITEM(self->owner, 0) : Py_None;
    if (!PyLong_CheckExact(owner)) return direct_slow(self, args, nargsf, kw);
    unsigned long ident = PyLong_AsUnsignedLong(owner);
    if (ident != PyThread_get_thread_ident()) {
        PyErr_Clear();
        return direct_slow(self, args, nargsf, kw);
    }
    PyObject *stream_of = PyDict_GetItemWithError(self->queries, str_stream_of);
    PyObject *current_device = stream_of ? PyDict_GetItemWithError(self->queries, str_current_device) : NULL;
    if (current_device == NULL) {
        PyErr_Clear();
        return direct_slow(self, args, nargsf, kw);
    }
    PyObject *stream = PyObject_Vectorcall(stream_of, &self->device, 1, NULL);
    if (stream == NULL) {
        PyErr_Clear();
        return direct_slow(self, args, nargsf, kw);
    }
    PyObject *current = PyObject_Vectorcall(current_device, NULL, 0, NULL);
    long cur = current ? PyLong_AsLong(current) : -1;
    Py_XDECREF(current);
    if (cur != self->device_index) {
        PyErr_Clear();
        Py_DECREF(stream);
        return direct_slow(self, args, nargsf, kw);
    }
    int err = launch_values(self->launch, args[0], stream, args + 1, self->positions);
    Py_DECREF(stream);
    if (err == 0) Py_RETURN_NONE;
    return direct_slow(self, args, nargsf, kw);   /* relaunched there: it reports the error */
}

static int direct_traverse(Direct *self, visitproc visit, void *arg) {
    Py_VISIT(self->dict);
    Py_VISIT(self->launch);
    Py_VISIT(self->slow);
    Py_VISIT(self->owner);
    Py_VISIT(self->queries);
    Py_VISIT(self->device);
    return 0;
}

static int direct_clear(Direct *self) {
    Py_CLEAR(self->dict);
    Py_CLEAR(self->launch);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->queries);
    Py_CLEAR(self->device);
    return 0;
}

static void direct_dealloc(Direct *self) {
    PyObject_GC_UnTrack(self);
    direct_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *direct_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *launch, *slow, *positions, *owner, *queries;
    Py_ssize_t arity;
    long device;
    if (!PyArg_ParseTuple(args, "O!OO!nO!O!l", &LaunchType, &launch, &slow, &PyTuple_Type, &positions, &arity,
                          &PyList_Type, &owner, &PyDict_Type, &queries, &device))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(positions);
    if (n != ((Launch *)launch)->n || arity < 0 || arity > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "one position per slot of the launch, at most 256 values");
        return NULL;
    }
    Direct *self = (Direct *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = direct_call;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, i));
        if (p < 0 || p >= arity) {
            Py_DECREF(self);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a position outside the values");
            return NULL;
        }
        self->positions[i] = p;
    }
    self->device = PyLong_FromLong(device);
    if (self->device == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    Py_INCREF(launch);
    Py_INCREF(slow);
    Py_INCREF(owner);
    Py_INCREF(queries);
    self->launch = (Launch *)launch;
    self->slow = slow;
    self->owner = owner;
    self->queries = queries;
    self->device_index = device;
    self->arity = arity;
    return (PyObject *)self;
}

static PyTypeObject DirectType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritium_claunch.Direct",
    .tp_basicsize = sizeof(Direct),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Direct, vectorcall),
    .tp_dictoffset = offsetof(Direct, dict),
    .tp_call = PyVectorcall_Call,
    .tp_new = direct_new,
    .tp_traverse = (traverseproc)direct_traverse,
    .tp_clear = (inquiry)direct_clear,
    .tp_dealloc = (destructor)direct_dealloc,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_doc = "Direct(launch, slow, positions, arity, owner list, queries dict, device)",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritium_claunch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__tritium_claunch(void) {
    if (PyType_Ready(&LaunchType) < 0 || PyType_Ready(&DirectType) < 0) return NULL;
    str_stream_of = PyUnicode_InternFromString("stream_of");
    str_current_device = PyUnicode_InternFromString("current_device");
    if (str_stream_of == NULL || str_current_device == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&LaunchType);
    if (PyModule_AddObject(m, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(&LaunchType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&DirectType);
    if (PyModule_AddObject(m, "Direct", (PyObject *)&DirectType) < 0) {
        Py_DECREF(&DirectType);
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


def load():
    """The extension module, built on first use (``tritium.runtime.cext``); None where it cannot
    be (no compiler, no Python headers, a failed build or import), or when
    ``TRITIUM_CUDA_LAUNCH`` asks for a Python launch path."""
    if (knobs.nvidia.launch_impl or "c") != "c":  # TRITIUM_CUDA_LAUNCH
        return None
    return cext.load("_tritium_claunch", SOURCE)
