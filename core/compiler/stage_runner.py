"""``tritium.compiler.stage_runner``: run a source's stages through the on-disk cache
(:func:`build`): a hit gives back every stage's text and the metadata; a miss runs the stages one
after another, keeps each one's text and stores them.  The cache key covers Tritium's version, the
sources of the compiler and of the backend's plugin (:func:`fingerprint`), the source, the
options, the target and the last stage asked for."""
from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

from .. import __version__
from ..frontend.errors import CompilationError
from .kernel import CompiledKernel
from ..runtime.cache import CacheManager, always_compile, make_key
from ..ttir.ir import print_module


def build(backend, target, name: str, source_key: str, options, runtime_sig: dict, plan, error,
          last_stage: str | None = None) -> CompiledKernel:
    """Run a source's stages through the on-disk cache.  ``plan()`` (called on a miss) gives
    ``(metadata, stages, first input)``; ``error(stage, exc)`` the CompilationError for an
    internal failure."""
    key = make_key(__version__, fingerprint(backend), source_key, options.hash_key(), str(target), backend.name,
                   backend.info.version, backend.toolchain_hash(target), last_stage or "")
    cache = CacheManager(key)
    if not always_compile():
        group = cache.get_group()
        if group is not None:
            try:
                metadata = json.loads(group[f"{name}.json"])
                asm = {}
                for st in metadata["stages"]:
                    data = group[f"{name}.{st}"]
                    asm[st] = data if st in metadata.get("binary_stages", ()) else data.decode()
                return CompiledKernel(backend, target, asm, metadata, runtime_sig)
            except (KeyError, ValueError, UnicodeDecodeError):
                cache.remove()  # unreadable: compile again rather than trust it
    metadata, stages, cur = plan()
    asm: dict[str, Any] = {}
    binary_stages = []
    from xdsl.dialects.builtin import ModuleOp
    for st, fn in stages.items():
        try:
            cur = fn(cur, metadata)
        except CompilationError as e:
            # the message already points at the user's line; the compiler's frames add nothing
            # (the cause, where there is one, is the error a language function raised, in its words)
            raise e.with_traceback(None) from e.__cause__
        except Exception as e:  # noqa: BLE001 - report which stage broke, without internals
            raise error(st, e) from e
        if isinstance(cur, ModuleOp):
            asm[st] = print_module(cur)
        else:
            asm[st] = cur
            if isinstance(cur, (bytes, bytearray)):
                binary_stages.append(st)
        if st == last_stage:
            break
    metadata["stages"] = list(asm)
    metadata["binary_stages"] = binary_stages
    files = {f"{name}.{st}": (v if isinstance(v, (bytes, bytearray)) else v.encode()) for st, v in asm.items()}
    files[f"{name}.json"] = json.dumps(metadata, default=str).encode()
    try:
        cache.put_group(files)
    except OSError:
        pass  # a read-only or full cache directory must not stop compilation
    return CompiledKernel(backend, target, asm, metadata, runtime_sig)


_FINGERPRINTS: dict = {}


def fingerprint(backend) -> str:
    """Hash of the compiler's own sources and of the backend plugin's package, so a changed
    compiler never reuses kernels an older one cached."""
    roots = [pathlib.Path(__file__).parent.parent]  # the whole tritium package
    plugin_dir = backend.package_dir()
    if plugin_dir is not None:
        roots.append(plugin_dir)
    key = tuple(str(r) for r in roots)
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for root in roots:
            for f in sorted(root.rglob("*.py")):
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
        _FINGERPRINTS[key] = h.hexdigest()
    return _FINGERPRINTS[key]
