"""The backend plugin contract.

A backend is a pip-installable distribution that declares an entry point in the ``tritium``
group pointing at a module (or object) carrying ``@hookimpl`` functions below::

    [project.entry-points.tritium]
    nvidia = "tritium_nvidia.plugin"

The module must also define ``TRITIUM_PLUGIN_API = <int>``; a plugin whose value differs from
:data:`PLUGIN_API_VERSION` is not loaded (one warning names it).  A plugin that fails to import
is skipped the same way; ``import tritium`` and the other backends keep working.

Hooks marked *firstresult* are asked of every plugin in turn until one returns something other
than ``None``: an implementation returns ``None`` for targets that are not its own.  Everything
else is collected from every plugin into a list.  ``docs/hooks.md`` mirrors this module.
"""
from __future__ import annotations

import pluggy

PROJECT = "tritium"
PLUGIN_API_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def tritium_backend_info():
    """Describe the backend(s) this plugin provides.

    Returns a :class:`tritium.hooks.types.BackendInfo` (or a list of them).  Called once, when
    plugins are loaded.  ``api_version`` must equal :data:`PLUGIN_API_VERSION`.
    """


@hookspec(firstresult=True)
def tritium_device_present(backend: str):
    """Whether a device of ``backend`` (a ``BackendInfo.name``) is usable in this process.

    Return ``True``/``False`` for your own backend, ``None`` otherwise.  Must not raise and must be
    cheap after the first call (cache the answer): it decides the default backend.  A backend
    whose device is absent still compiles (compile-only mode).
    """


@hookspec(firstresult=True)
def tritium_current_target(backend: str):
    """The :class:`GPUTarget` of the current device of ``backend``, or ``None`` if it has none.

    Its ``warp_size`` is the device's, and is what ``threads_per_warp`` defaults to.
    """


@hookspec(firstresult=True)
def tritium_parse_target(text: str):
    """Parse a target string such as ``"cuda:90"`` or ``"hip:gfx942"`` into a :class:`GPUTarget`.

    Return ``None`` when the kind before the colon is not yours; raise ``ValueError`` with a
    message listing what is accepted when it is yours but the architecture is unknown.
    """


@hookspec(firstresult=True)
def tritium_parse_options(target, options: dict):
    """Turn the user's keyword options (``num_warps``, ``num_stages``, backend-specific extras)
    into a frozen, hashable options object for ``target`` (a subclass of
    :class:`tritium.hooks.types.Options`).

    ``threads_per_warp`` must come from ``target.warp_size``, never a constant.  Unknown keys are
    ignored; invalid values raise ``ValueError`` naming the option and the value.
    """


@hookspec(firstresult=True)
def tritium_add_stages(target, stages: dict, options):
    """Append the backend's compilation stages for ``target`` to the ordered dict ``stages``.

    On entry ``stages`` holds ``"ttir"`` (the shared frontend and TTIR pipeline).  Each value is a
    callable ``stage(src, metadata) -> src`` taking the previous stage's text or module and
    returning this stage's, and may record facts in the ``metadata`` dict (``name``,
    ``shared``, ``num_warps``, ...).  The last stage's result is the binary handed to the driver.
    Return ``True`` when the target is yours, ``None`` otherwise.
    """


@hookspec
def tritium_layout_encodings():
    """Vendor layout encodings to register in the ``ttg`` dialect.

    Return a list of xDSL attribute classes (``ParametrizedAttribute`` subclasses named
    ``ttg.nvidia_mma``, ``ttg.amd_mfma``, ...) implementing
    :class:`tritium.ttgir.encodings.DistributedEncoding`.  Called once, when the TTGIR
    context is first built; every installed plugin's encodings are registered so that any TTGIR
    text can be parsed.
    """


@hookspec(firstresult=True)
def tritium_membar_filter(target):
    """The backend's barrier rule for ``target``: a callable ``(op_a, op_b) -> bool`` returning
    ``True`` when a barrier between two shared-memory accesses ``op_a`` (earlier) and ``op_b``
    (later) is NOT needed (e.g. both are asynchronous copies ordered by their own barriers).
    Return ``None`` (not yours) or ``lambda a, b: False`` for the conservative rule.
    """


@hookspec(firstresult=True)
def tritium_scratch_sizes(target):
    """Scratch rules for ops whose lowering on ``target`` needs other room than the core rule
    (:mod:`tritium.ttgir.scratch`, which covers every core op): a mapping ``op name ->
    callable(op) -> bytes``.

    Asked once per compile, by the core's ``finalize_ttgir`` (on every path: a kernel from Python
    and a ``.ttgir`` file alike); the allocation pass, membar and the software pipeliner's
    budget all use the answer.  Return ``None`` or ``{}`` to keep the core rules.
    """


@hookspec(firstresult=True)
def tritium_toolchain_hash(target):
    """A text naming what outside the plugin's Python sources decides the binaries it builds for
    ``target``: its assembler and linker and their versions (Triton's ``BaseBackend.hash()``).
    It is part of every kernel's cache key (with the sources of core and of the plugin's package,
    the options and the target), so the cache never hands one toolchain's binary to a process that
    would build with another.  Asked once per compile, before the cache lookup: keep it cheap
    (cache tool versions; read the environment switches that choose a tool each time).  ``None``
    or ``""``: nothing outside the sources.
    """


@hookspec(firstresult=True)
def tritium_after_allocation_passes(target, options):
    """Passes the backend runs on its TTGIR after shared memory is allocated and before membar
    places barriers (they see every buffer's ``allocation.offset``): a list of objects with
    ``run(module)``.  Asked by ``finalize_ttgir`` on every path; ``None`` or ``[]`` for none.
    """


@hookspec(firstresult=True)
def tritium_tensor_descriptor_map(backend: str, target, descriptor):
    """A hardware descriptor of the host tensor descriptor ``descriptor`` (a
    :class:`tritium.tools.tensor_descriptor.TensorDescriptor`) for a launch on ``backend``'s device
    of ``target``, or ``None``.

    Called at each launch that passes host descriptors, once per descriptor (cache the answer).
    The result is passed to the kernel as one more pointer argument (the backend's device memory
    holding the map: anything its driver accepts as a pointer), and the descriptor's
    ``desc.load`` / ``desc.store`` then become ``tt.descriptor_load`` / ``tt.descriptor_store`` on
    that pointer, which the plugin's stages lower (NVIDIA sm_90: a TMA tensor map and
    ``cp.async.bulk.tensor``).  With ``None`` (not yours, no such hardware, or a shape, stride or
    element type it cannot take) the accesses are block-pointer loads and stores, as on every
    backend.
    """


@hookspec(firstresult=True)
def tritium_device_tensor_descriptor(target, options, element: str, block_shape: tuple, padding: str):
    """Whether kernels for ``target`` build a hardware descriptor of their own for a
    ``tl.make_tensor_descriptor`` of ``element`` values (a signature type name: ``"fp16"``,
    ``"i32"``...) moved in blocks of ``block_shape`` (outermost first) with ``padding``
    (``"zero"`` or ``"nan"``).

    Answer the alignment in bytes that the base address and every stride but the last must be
    known to have (NVIDIA's tensor maps: 16), or ``None``/``0`` to decline.  The frontend then
    emits ``tt.make_tensor_descriptor`` (the map, for the plugin's stages to place and fill) where
    it can prove that alignment from the kernel's specialisation (arguments divisible by 16,
    ``tl.multiple_of``, constants) and the descriptor is made in the kernel or in a function
    inlined into it; its accesses become ``tt.descriptor_load`` / ``tt.descriptor_store``.
    Elsewhere they stay block-pointer loads and stores, as on every backend.  Asked at compile
    time, once per ``tl.make_tensor_descriptor``.
    """


@hookspec(firstresult=True)
def tritium_tensor_descriptor_mapper(backend: str, target):
    """Optional, the fast form of ``tritium_tensor_descriptor_map``: a callable
    ``descriptor -> hardware descriptor or None`` answering as that hook would for ``backend``'s
    device of ``target``.

    Asked once per (backend, target); the launch path then calls the callable directly for every
    host descriptor of every launch, without a hook call each time (a launch's host time counts
    against kernels of a few microseconds).  Return ``None`` (the default) and the launch calls
    ``tritium_tensor_descriptor_map`` instead.
    """


@hookspec(firstresult=True)
def tritium_driver(backend: str):
    """The driver object of ``backend``: a :class:`tritium.runtime.driver.Driver`.

    Called once per backend and cached.  It loads binaries, launches kernels, reports device
    properties and recognises the backend's own memory (for choosing the backend from where the
    argument tensors live).  Return ``None`` for other backends.
    """


@hookspec
def tritium_conformance_exclusions(backend: str, target):
    """Conformance cases ``backend`` knows it cannot pass on ``target``, each with a reason.

    Return a list of :class:`tritium.hooks.types.ConformanceExclusion` (or ``None``).  The
    conformance runner shows them as *excluded*; an excluded case that passes is reported as an
    unexpected pass and fails the run, so keep the list honest.
    """
