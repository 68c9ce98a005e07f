"""The direct binder's launch step in C (``direct_binder.py``): bind the arguments, build the key,
find the launch, call the backend's direct launcher.

The generated Python binder (``DirectBinder``) reads each torch tensor's address, dtype and
device and builds a key tuple; most of its cost is the interpreter's, around calls into torch
that take tens of nanoseconds each.  A ``Binder`` does the same steps in C and builds the *same*
key tuple, part for part, so that the one cache serves both and ``DirectBinder.fill`` files keys
for it with the Python key function::

    b = Binder(names, kinds, flags, values, options, defaults, MISSING, cache, env_data, env_key,
               wide, grid_of, fallback)
    b(grid, *args, **kwargs)                        # the compiled kernel, launched

``kinds`` has a letter per parameter: ``t`` tensor, ``i`` int, ``f`` float, ``b`` bool, ``n``
None, ``c`` constexpr.  ``flags``: for a tensor ``a`` when its address takes part in the
alignment element, for an int ``s`` (specialised: multiple of 16 / one / other), ``o`` (only
"equal to one") or ``-`` (``do_not_specialize``).  ``values``: the parameters handed to the
direct launcher, in order (a tensor as its address).  Whatever it cannot take (an unknown or
repeated keyword, a missing argument, a value of another kind than the pattern's, an error
reading a tensor, a key not in the cache) goes to ``fallback``, the generated Python binder,
with the call's own arguments: the outcome is the Python binder's in every case.

A torch tensor's three fields are read in C++ once ``torch_reader.py`` has built its reader
(``set_tensor_reader``), through torch's calls before that and for anything it does not take.
"""
from __future__ import annotations
from .. import knobs
from . import cext, torch_reader

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_PARAMS 128

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict;
    PyObject *names, *options, *defaults, *missing, *cache, *env_data, *env_key, *wide, *grid_of, *fallback;
    Py_ssize_t n, nopts, nvalues, nkey;
    char kinds[MAX_PARAMS], flags[MAX_PARAMS];
    Py_ssize_t values[MAX_PARAMS];
    int aligned;
} Binder;

static PyObject *s_data_ptr, *s_dtype, *s_get_device, *two_obj, *zero_obj;

/* torch_reader.py's read_tensor, once built: 0 and the three fields, or nonzero where the
   binder asks torch through Python */
typedef int (*reader_fn)(PyObject *, unsigned long long *, PyObject **, long *);
static reader_fn tensor_reader;

static PyObject *fallback(Binder *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyErr_Clear();
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static Py_ssize_t find_name(PyObject *names, PyObject *name) {
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(names, i) == name) return i;
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, i), name);
        if (eq == 0) return i;
        if (eq == -1 && PyErr_Occurred()) return -2;
    }
    return -1;
}

static PyObject *binder_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Binder *self = (Binder *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = self->n;
    PyObject *vals[MAX_PARAMS];
    PyObject *opts[MAX_PARAMS];
    PyObject *addr[MAX_PARAMS];
    if (nargs < 1 || nargs - 1 > n) return fallback(self, args, nargsf, kwnames);
    for (Py_ssize_t i = 0; i < n; i++) vals[i] = i < nargs - 1 ? args[1 + i] : NULL;
    for (Py_ssize_t i = 0; i < self->nopts; i++) opts[i] = self->missing;
    if (kwnames != NULL) {
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            Py_ssize_t i = find_name(self->names, name);
            if (i >= 0) {
                if (vals[i] != NULL) return fallback(self, args, nargsf, kwnames);
                vals[i] = args[nargs + k];
                continue;
            }
            if (i == -1) i = find_name(self->options, name);
            if (i < 0) return fallback(self, args, nargsf, kwnames);
            opts[i] = args[nargs + k];
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (vals[i] == NULL) {
            vals[i] = PyTuple_GET_ITEM(self->defaults, i);
            if (vals[i] == self->missing) return fallback(self, args, nargsf, kwnames);
        }
        addr[i] = NULL;
    }
    PyObject *key = PyTuple_New(self->nkey);
    if (key == NULL) return NULL;
    Py_ssize_t at = 0;
    PyObject *result = NULL, *part;
#define PUT(x) do { part = (x); if (part == NULL) goto miss; PyTuple_SET_ITEM(key, at++, part); } while (0)
#define PUT_BORROWED(x) do { part = (x); Py_INCREF(part); PyTuple_SET_ITEM(key, at++, part); } while (0)
    part = PyDict_GetItemWithError(self->env_data, self->env_key);
    if (part == NULL && PyErr_Occurred()) goto miss;
    PUT_BORROWED(part ? part : Py_None);
    unsigned long long any = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = vals[i];
        switch (self->kinds[i]) {
        case 't': {
            unsigned long long x;
            PyObject *dtype;
            long device;
            if (tensor_reader != NULL && tensor_reader(v, &x, &dtype, &device) == 0) {
                PyObject *a = PyLong_FromUnsignedLongLong(x);
                if (a == NULL) goto miss;
                addr[i] = a;
                PUT_BORROWED(dtype);
                PUT(PyLong_FromLong(device));
            } else {
                PyObject *a = PyObject_VectorcallMethod(s_data_ptr, &v, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
                if (a == NULL) goto miss;
                addr[i] = a;
                PUT(PyObject_GetAttr(v, s_dtype));
                PUT(PyObject_VectorcallMethod(s_get_device, &v, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL));
                if (self->flags[i] != 'a') break;
                x = PyLong_AsUnsignedLongLong(a);
                if (x == (unsigned long long)-1 && PyErr_Occurred()) goto miss;
            }
            if (self->flags[i] == 'a') any |= x & 15;
            break;
        }
        case 'i': {
            if (!PyLong_CheckExact(v)) goto miss;
            PUT_BORROWED((PyObject *)Py_TYPE(v));
            int overflow;
            long long a = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow == 0 && a == -1 && PyErr_Occurred()) goto miss;
            if (self->flags[i] == 'o') {
                PUT_BORROWED(!overflow && a == 1 ? Py_True : Py_False);
            } else if (self->flags[i] == 's') {
                if (overflow) goto miss;  /* outside 64 bits: the Python binder reports it */
                PUT_BORROWED((a & 15) == 0 ? Py_True : a == 1 ? two_obj : Py_False);
            }
            if (!overflow && a >= -0x80000000LL && a <= 0x7fffffffLL) {
                PUT_BORROWED(Py_True);
            } else {
                PUT(PyObject_CallOneArg(self->wide, v));
            }
            break;
        }
        case 'c':
            PUT_BORROWED((PyObject *)Py_TYPE(v));
            PUT_BORROWED(v);
            break;
        default:  /* float, bool, None: the type says it all */
            PUT_BORROWED((PyObject *)Py_TYPE(v));
        }
    }
    if (self->aligned) {
        if (any == 0) {
            PUT_BORROWED(zero_obj);
        } else {
            PyObject *t = PyTuple_New(self->aligned);
            if (t == NULL) goto miss;
            Py_ssize_t j = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (self->kinds[i] != 't' || self->flags[i] != 'a') continue;
                PyObject *low = PyLong_FromUnsignedLongLong(PyLong_AsUnsignedLongLong(addr[i]) & 15);
                if (low == NULL) { Py_DECREF(t); goto miss; }
                PyTuple_SET_ITEM(t, j++, low);
            }
            PUT(t);
        }
    }
    for (Py_ssize_t i = 0; i < self->nopts; i++) PUT_BORROWED(opts[i]);
#undef PUT
#undef PUT_BORROWED
    if (at != self->nkey) goto miss;
    PyObject *entry = PyDict_GetItemWithError(self->cache, key);
    if (entry == NULL && PyErr_Occurred()) PyErr_Clear();  /* an unhashable option: the general path */
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) goto miss;
    PyObject *go = PyTuple_GET_ITEM(entry, 0), *kernel = PyTuple_GET_ITEM(entry, 1);
    Py_INCREF(go);
    Py_INCREF(kernel);
    PyObject *grid = args[0];
    Py_INCREF(grid);
    if (!PyTuple_CheckExact(grid)) {
        PyObject *all = PyTuple_New(n), *os = PyTuple_New(self->nopts);
        if (all == NULL || os == NULL) { Py_XDECREF(all); Py_XDECREF(os); goto fail; }
        for (Py_ssize_t i = 0; i < n; i++) { Py_INCREF(vals[i]); PyTuple_SET_ITEM(all, i, vals[i]); }
        for (Py_ssize_t i = 0; i < self->nopts; i++) { Py_INCREF(opts[i]); PyTuple_SET_ITEM(os, i, opts[i]); }
        PyObject *gargs[4] = {grid, kernel, all, os};
        PyObject *g = PyObject_Vectorcall(self->grid_of, gargs, 4, NULL);
        Py_DECREF(all);
        Py_DECREF(os);
        if (g == NULL) goto fail;
        Py_DECREF(grid);
        grid = g;
    }
    {
        PyObject *call[MAX_PARAMS + 2];
        call[1] = grid;
        for (Py_ssize_t k = 0; k < self->nvalues; k++) {
            Py_ssize_t i = self->values[k];
            call[2 + k] = addr[i] != NULL ? addr[i] : vals[i];
        }
        PyObject *r = PyObject_Vectorcall(go, call + 1, (self->nvalues + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(grid);
    Py_DECREF(go);
    result = kernel;
    goto done;
fail:  /* an error from the launch itself (not a miss): it propagates, as from the Python binder */
    Py_XDECREF(grid);
    Py_DECREF(go);
    Py_DECREF(kernel);
    result = NULL;
    goto done;
miss:
    for (Py_ssize_t i = 0; i < n; i++) Py_CLEAR(addr[i]);
    Py_DECREF(key);
    return fallback(self, args, nargsf, kwnames);
done:
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(addr[i]);
    Py_DECREF(key);
    return result;
}

static int binder_traverse(Binder *self, visitproc visit, void *arg) {
    Py_VISIT(self->dict); Py_VISIT(self->names); Py_VISIT(self->options); Py_VISIT(self->defaults);
    Py_VISIT(self->missing); Py_VISIT(self->cache); Py_VISIT(self->env_data); Py_VISIT(self->env_key);
    Py_VISIT(self->wide); Py_VISIT(self->grid_of); Py_VISIT(self->fallback);
    return 0;
}

static int binder_clear(Binder *self) {
    Py_CLEAR(self->dict); Py_CLEAR(self->names); Py_CLEAR(self->options); Py_CLEAR(self->defaults);
    Py_CLEAR(self->missing); Py_CLEAR(self->cache); Py_CLEAR(self->env_data); Py_CLEAR(self->env_key);
    Py_CLEAR(self->wide); Py_CLEAR(self->grid_of); Py_CLEAR(self->fallback);
    return 0;
}

static void binder_dealloc(Binder *self) {
    PyObject_GC_UnTrack(self);
    binder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *binder_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *names, *options, *defaults, *missing, *cache, *env_data, *env_key, *wide, *grid_of, *fallback_;
    const char *kinds, *flags;
    Py_ssize_t nkinds, nflags;
    PyObject *values;
    if (!PyArg_ParseTuple(args, "O!s#s#O!O!O!OO!O!OOOO", &PyTuple_Type, &names, &kinds, &nkinds, &flags, &nflags,
                          &PyTuple_Type, &values, &PyTuple_Type, &options, &PyTuple_Type, &defaults, &missing,
                          &PyDict_Type, &cache, &PyDict_Type, &env_data, &env_key, &wide, &grid_of, &fallback_))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > MAX_PARAMS || nkinds != n || nflags != n || PyTuple_GET_SIZE(defaults) != n
            || PyTuple_GET_SIZE(values) > n || PyTuple_GET_SIZE(options) > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "Binder: one kind, flag and default per parameter, at most 128");
        return NULL;
    }
    Binder *self = (Binder *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = binder_call;
    self->n = n;
    self->nopts = PyTuple_GET_SIZE(options);
    self->nvalues = PyTuple_GET_SIZE(values);
    Py_ssize_t nkey = 1 + self->nopts;
    for (Py_ssize_t i = 0; i < n; i++) {
        char k = kinds[i], f = flags[i];
        if (!strchr("tifbnc", k) || !strchr("aso-", f)) {
            Py_DECREF(self);
            PyErr_Format(PyExc_ValueError, "Binder: unknown kind %c or flag %c", k, f);
            return NULL;
        }
        self->kinds[i] = k;
        self->flags[i] = f;
        nkey += k == 't' ? 2 : k == 'c' ? 2 : k == 'i' ? (f == '-' ? 2 : 3) : 1;
        if (k == 't' && f == 'a') self->aligned++;
    }
    nkey += self->aligned ? 1 : 0;
    self->nkey = nkey;
    for (Py_ssize_t k = 0; k < self->nvalues; k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(values, k));
        if (i < 0 || i >= n) {
            Py_DECREF(self);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Binder: a value outside the parameters");
            return NULL;
        }
        self->values[k] = i;
    }
    PyObject *objs[] = {names, options, defaults, missing, cache, env_data, env_key, wide, grid_of, fallback_};
    for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) Py_INCREF(objs[i]);
    self->names = names; self->options = options; self->defaults = defaults; self->missing = missing;
    self->cache = cache; self->env_data = env_data; self->env_key = env_key; self->wide = wide;
    self->grid_of = grid_of; self->fallback = fallback_;
    return (PyObject *)self;
}

static PyTypeObject BinderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritium_cbinder.Binder",
    .tp_basicsize = sizeof(Binder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Binder, vectorcall),
    .tp_dictoffset = offsetof(Binder, dict),
    .tp_call = PyVectorcall_Call,
    .tp_new = binder_new,
    .tp_traverse = (traverseproc)binder_traverse,
    .tp_clear = (inquiry)binder_clear,
    .tp_dealloc = (destructor)binder_dealloc,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_doc = "Binder(names, kinds, flags, values, options, defaults, missing, cache, env_data, env_key, wide, grid_of, fallback)",
};

/* set_tensor_reader(address): torch_reader's read_tensor (0: none, every tensor through Python) */
static PyObject *set_tensor_reader(PyObject *m, PyObject *address) {
    void *p = PyLong_AsVoidPtr(address);
    if (p == NULL && PyErr_Occurred()) return NULL;
    tensor_reader = (reader_fn)p;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_tensor_reader", (PyCFunction)set_tensor_reader, METH_O, "set_tensor_reader(address)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritium_cbinder", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__tritium_cbinder(void) {
    if (PyType_Ready(&BinderType) < 0) return NULL;
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_get_device = PyUnicode_InternFromString("get_device");
    two_obj = PyLong_FromLong(2);
    zero_obj = PyLong_FromLong(0);
    if (!s_data_ptr || !s_dtype || !s_get_device || !two_obj || !zero_obj) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&BinderType);
    if (PyModule_AddObject(m, "Binder", (PyObject *)&BinderType) < 0) {
        Py_DECREF(&BinderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""


def load():
    """The extension, or None (no C compiler or Python headers here, or ``TRITIUM_C_BINDER=0``:
    launches keep the generated Python binder; ``knobs.runtime.c_binder``)."""
    if not knobs.runtime.c_binder:
        return None
    mod = cext.load("_tritium_cbinder", SOURCE)
    if mod is not None:
        torch_reader.install(mod.set_tensor_reader)
    return mod
