/* A stand-in for libcuda.so.1 with FAKE_DEVICES devices and no GPU, for CPU tests and the CPU
 * launch micro-benchmark.  cuda.bindings binds to it as to the real driver (it resolves every
 * entry point through cuGetProcAddress_v2), so Tritium's driver code runs unchanged through the
 * real bindings.  It models what the multi-device logic depends on:
 *   - one primary context per device and a per-thread stack of current contexts;
 *   - modules and functions belong to the context current when they were loaded;
 *   - allocations live on one device, in an address range of their own (pointer attributes);
 *   - cuLaunchKernel fails with CUDA_ERROR_INVALID_CONTEXT when no context is current and with
 *     CUDA_ERROR_INVALID_HANDLE when the function belongs to another context, and records the
 *     launches it accepts (fake_launch_count / fake_last_launch);
 *   - cuLaunchKernelEx does the same and records the cluster dimension it was given (1, 1, 1 for
 *     a plain launch); every function fits FAKE_BLOCKS_PER_SM blocks an SM and clusters of any
 *     size fill them (the occupancy queries).
 * Never linked into Tritium itself: tests build it with the system C compiler when one exists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;

enum {
    OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_DEVICE = 101, INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400, NOT_FOUND = 500, NOT_SUPPORTED = 801
};

#ifndef FAKE_DEVICES
#define FAKE_DEVICES 2
#endif
#define MAX_FUNCS 4096
#define FAKE_SMS 132
#define FAKE_BLOCKS_PER_SM 2
#define STACK 16
#define ARENA (1ull << 36)

struct ctx { int device; int magic; };
struct module { struct ctx *ctx; int magic; };
struct function { struct ctx *ctx; struct module *mod; int magic; };

static struct ctx contexts[FAKE_DEVICES];
static int initialized;
static int n_devices = FAKE_DEVICES;
static __thread struct ctx *stack[STACK];
static __thread int depth;
static uint64_t next_offset[FAKE_DEVICES];

/* What tests read back (through ctypes). */
long fake_launch_count;
struct {
    void *function; int device; void *stream; unsigned grid[3], block[3], shared;
    uint64_t params[16]; int n_params; unsigned cluster[3];
} fake_last_launch;
int fake_launch_params = 5;   /* how many 8-byte kernel parameters to record */

void fake_set_device_count(int n) { n_devices = n < FAKE_DEVICES ? n : FAKE_DEVICES; }
void fake_reset_thread(void) { depth = 0; }

static struct ctx *current(void) { return depth ? stack[depth - 1] : 0; }

static CUresult cuInit(unsigned flags) { (void)flags; initialized = 1;
    for (int i = 0; i < FAKE_DEVICES; i++) { contexts[i].device = i; contexts[i].magic = 0x5151; }
    return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
static CUresult cuDeviceGetCount(int *n) { if (!initialized) return NOT_INITIALIZED; *n = n_devices; return OK; }
static CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= n_devices) return INVALID_DEVICE; *d = ordinal; return OK; }
static CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    (void)d; strncpy(name, "Fake GPU", len); return OK; }
static CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d;
    switch (attr) {
    case 75: *v = 9; break;            /* compute capability major */
    case 76: *v = 0; break;            /* minor */
    case 10: *v = 32; break;           /* warp size */
    case 16: *v = FAKE_SMS; break;     /* multiprocessors */
    case 120: *v = 1; break;           /* cluster launch */
    case 1: *v = 1024; break;          /* max threads per block */
    case 8: *v = 48 * 1024; break;     /* shared memory per block */
    case 97: *v = 227 * 1024; break;   /* opt-in shared memory per block */
    default: *v = 0;
    }
    return OK;
}
static CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) { (void)d; *bytes = 1ull << 36; return OK; }
static CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice d) {
    if (d < 0 || d >= n_devices) return INVALID_DEVICE; *pctx = &contexts[d]; return OK; }
static CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return OK; }
static CUresult cuCtxGetCurrent(void **pctx) { *pctx = current(); return OK; }
static CUresult cuCtxSetCurrent(void *c) {
    if (!c) { if (depth) depth--; return OK; }
    if (depth) stack[depth - 1] = c; else stack[depth++] = c;
    return OK;
}
static CUresult cuCtxPushCurrent(void *c) {
    if (!c || depth == STACK) return INVALID_VALUE; stack[depth++] = c; return OK; }
static CUresult cuCtxPopCurrent(void **pctx) {
    if (!depth) return INVALID_CONTEXT; struct ctx *c = stack[--depth]; if (pctx) *pctx = c; return OK; }
static CUresult cuCtxGetDevice(CUdevice *d) {
    if (!current()) return INVALID_CONTEXT; *d = current()->device; return OK; }
static CUresult cuCtxSynchronize(void) { return current() ? OK : INVALID_CONTEXT; }
static CUresult cuModuleLoadData(void **pmod, const void *image) {
    (void)image;
    if (!current()) return INVALID_CONTEXT;
    struct module *m = calloc(1, sizeof *m); m->ctx = current(); m->magic = 0x6d6d; *pmod = m; return OK;
}
static CUresult cuModuleUnload(void *m) { (void)m; return OK; }
static CUresult cuModuleGetFunction(void **pf, void *mod, const char *name) {
    (void)name;
    struct module *m = mod;
    if (!m || m->magic != 0x6d6d) return INVALID_HANDLE;
    struct function *f = calloc(1, sizeof *f); f->ctx = m->ctx; f->mod = m; f->magic = 0x6666; *pf = f; return OK;
}
static CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
    (void)f;
    switch (attr) {
    case 0: *v = 1024; break;  /* max threads per block */
    case 4: *v = 32; break;    /* registers */
    default: *v = 0;
    }
    return OK;
}
static CUresult cuFuncSetAttribute(void *f, int attr, int v) { (void)f; (void)attr; (void)v; return OK; }
/* Validate and record a launch of CTAs in clusters of cluster[0..2]. */
static CUresult record(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, void *stream, void **params, const unsigned cluster[3]) {
    struct function *f = fn;
    if (!current()) return INVALID_CONTEXT;
    if (!f || f->magic != 0x6666 || f->ctx != current()) return INVALID_HANDLE;
    if (!gx || !gy || !gz) return INVALID_VALUE;
    fake_launch_count++;
    fake_last_launch.function = fn; fake_last_launch.device = current()->device; fake_last_launch.stream = stream;
    fake_last_launch.grid[0] = gx; fake_last_launch.grid[1] = gy; fake_last_launch.grid[2] = gz;
    fake_last_launch.block[0] = bx; fake_last_launch.block[1] = by; fake_last_launch.block[2] = bz;
    fake_last_launch.shared = shared;
    for (int i = 0; i < 3; i++) fake_last_launch.cluster[i] = cluster[i];
    int n = fake_launch_params < 16 ? fake_launch_params : 16;
    for (int i = 0; i < n && params; i++) fake_last_launch.params[i] = *(uint64_t *)params[i];
    fake_last_launch.n_params = n;
    return OK;
}
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    static const unsigned one[3] = {1, 1, 1};
    (void)extra;
    return record(fn, gx, gy, gz, bx, by, bz, shared, stream, params, one);
}
/* cuLaunchKernelEx's configuration (CUlaunchConfig, CUlaunchAttribute as cuda.h lays them out). */
struct launch_attr { int id; char pad[4]; union { char bytes[64]; struct { unsigned x, y, z; } cluster; } value; };
struct launch_config {
    unsigned gx, gy, gz, bx, by, bz, shared; void *stream; struct launch_attr *attrs; unsigned n_attrs;
};
/* The cluster dimension a configuration asks for (1, 1, 1 without the attribute). */
static void cluster_dim(const struct launch_config *c, unsigned out[3]) {
    out[0] = out[1] = out[2] = 1;
    for (unsigned i = 0; c && i < c->n_attrs; i++)
        if (c->attrs[i].id == 4) {   /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
            out[0] = c->attrs[i].value.cluster.x; out[1] = c->attrs[i].value.cluster.y;
            out[2] = c->attrs[i].value.cluster.z;
        }
}
CUresult cuLaunchKernelEx(const struct launch_config *c, void *fn, void **params, void **extra) {
    unsigned d[3];
    (void)extra;
    cluster_dim(c, d);
    if (!d[0] || !d[1] || !d[2] || c->gx % d[0] || c->gy % d[1] || c->gz % d[2]) return INVALID_VALUE;
    return record(fn, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shared, c->stream, params, d);
}
static CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int block, size_t shared) {
    (void)fn; (void)block; (void)shared; *n = FAKE_BLOCKS_PER_SM; return OK; }
static CUresult cuOccupancyMaxActiveClusters(int *n, void *fn, const struct launch_config *c) {
    unsigned d[3];
    cluster_dim(c, d);
    (void)fn; *n = FAKE_SMS * FAKE_BLOCKS_PER_SM / (d[0] * d[1] * d[2]); return OK;
}
/* Device memory: device d's allocations live in [base(d), base(d) + ARENA). */
static uint64_t base(int d) { return 0x100000000000ull + (uint64_t)d * ARENA; }
static CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
    if (!current()) return INVALID_CONTEXT;
    int d = current()->device;
    *p = base(d) + next_offset[d];
    next_offset[d] += (n + 255) & ~(size_t)255;
    return OK;
}
static CUresult cuMemFree(CUdeviceptr p) { (void)p; return OK; }
static int owner(CUdeviceptr p) {
    for (int d = 0; d < n_devices; d++) if (p >= base(d) && p < base(d) + next_offset[d]) return d;
    return -1;
}
static CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) { (void)dst; (void)src; (void)n; return OK; }
static CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { (void)src; memset(dst, 0, n); return OK; }
static CUresult get_attribute(void *data, int attr, CUdeviceptr p, int strict) {
    int d = owner(p);
    if (d < 0 && strict) return INVALID_VALUE;
    switch (attr) {
    case 1: *(void **)data = d < 0 ? 0 : &contexts[d]; break;   /* CONTEXT */
    case 2: *(unsigned *)data = d < 0 ? 0 : 2; break;            /* MEMORY_TYPE: DEVICE */
    case 8: *(int *)data = 0; break;                             /* IS_MANAGED (a bool in the driver: int-sized) */
    case 9: *(int *)data = d < 0 ? -2 : d; break;                /* DEVICE_ORDINAL */
    default: return strict ? INVALID_VALUE : OK;
    }
    return OK;
}
static CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) { return get_attribute(data, attr, p, 1); }
static CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
    for (unsigned i = 0; i < n; i++) get_attribute(data[i], attrs[i], p, 0);  /* never fails, as documented */
    return OK;
}
static const char *names[] = {[0] = "CUDA_SUCCESS", [1] = "CUDA_ERROR_INVALID_VALUE"};
static CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *s = (e >= 0 && e < 2) ? names[e] : "CUDA_ERROR_UNKNOWN";
    }
    return OK;
}
static CUresult cuGetErrorString(CUresult e, const char **s) { return cuGetErrorName(e, s); }
static CUresult not_supported(void) { return NOT_SUPPORTED; }

static const struct { const char *name; void *fn; } table[] = {
    {"cuInit", cuInit}, {"cuDriverGetVersion", cuDriverGetVersion}, {"cuDeviceGetCount", cuDeviceGetCount},
    {"cuDeviceGet", cuDeviceGet}, {"cuDeviceGetName", cuDeviceGetName},
    {"cuDeviceGetAttribute", cuDeviceGetAttribute}, {"cuDeviceTotalMem", cuDeviceTotalMem},
    {"cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain}, {"cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease},
    {"cuCtxGetCurrent", cuCtxGetCurrent}, {"cuCtxSetCurrent", cuCtxSetCurrent},
    {"cuCtxPushCurrent", cuCtxPushCurrent}, {"cuCtxPopCurrent", cuCtxPopCurrent},
    {"cuCtxGetDevice", cuCtxGetDevice}, {"cuCtxSynchronize", cuCtxSynchronize},
    {"cuModuleLoadData", cuModuleLoadData}, {"cuModuleUnload", cuModuleUnload},
    {"cuModuleGetFunction", cuModuleGetFunction}, {"cuFuncGetAttribute", cuFuncGetAttribute},
    {"cuFuncSetAttribute", cuFuncSetAttribute}, {"cuLaunchKernel", cuLaunchKernel},
    {"cuLaunchKernelEx", cuLaunchKernelEx},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor},
    {"cuOccupancyMaxActiveClusters", cuOccupancyMaxActiveClusters},
    {"cuMemAlloc", cuMemAlloc}, {"cuMemFree", cuMemFree}, {"cuMemcpyHtoD", cuMemcpyHtoD},
    {"cuMemcpyDtoH", cuMemcpyDtoH}, {"cuPointerGetAttribute", cuPointerGetAttribute},
    {"cuPointerGetAttributes", cuPointerGetAttributes}, {"cuGetErrorName", cuGetErrorName},
    {"cuGetErrorString", cuGetErrorString},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
    (void)version; (void)flags;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        if (!strcmp(symbol, table[i].name)) { *pfn = table[i].fn; if (status) *status = 0; return OK; }
    }
    *pfn = (void *)not_supported;
    if (status) *status = 0;
    return OK;
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, 0);
}
