"""On-disk cache of compiled kernels: one directory of files per key, written atomically.

A group (``kernel.ttir``, ``kernel.cubin``, ``kernel.json`` ...) is written whole into a private
temporary directory inside the cache root and then renamed into place, so a reader sees either
no entry or a complete one.  When several processes compile the same kernel the first rename
wins and the others discard their copy.  Each entry carries a manifest with the sha256 of every
file; an entry that fails verification (missing file, wrong checksum, unreadable manifest) is
removed and reported as a miss, so it is recompiled rather than trusted.

``knobs.cache.dir`` (``TRITIUM_CACHE_DIR``, or Triton's ``TRITON_CACHE_DIR``) chooses the root
(default ``$XDG_CACHE_HOME/tritium`` or ``~/.cache/tritium``); ``knobs.compilation.always_compile``
(``TRITIUM_ALWAYS_COMPILE=1`` / ``TRITON_ALWAYS_COMPILE=1``) makes every lookup a miss (entries are
still written, so the next normal run finds them).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Mapping
from .. import knobs, __version__

MANIFEST = "__manifest__.json"
_FORMAT = 1


def cache_dir() -> Path:
    """``knobs.cache.dir``: read at each call, so a changed knob or variable takes effect at once."""
    return Path(knobs.cache.dir)


def always_compile() -> bool:
    """``knobs.compilation.always_compile``."""
    return knobs.compilation.always_compile


def make_key(*parts: object) -> str:
    """sha256 (hex) of the parts; each part is hashed with its length so that ("ab", "c") and
    ("a", "bc") differ.  Bytes are hashed as they are, anything else through ``str``."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, (bytes, bytearray)) else str(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_name(name: str) -> None:
    if not name or name == MANIFEST or "/" in name or "\\" in name or name in (".", "..") or name.startswith(".tmp"):
        raise ValueError(f"cache file names must be plain file names other than {MANIFEST!r}, got {name!r}")


class CacheManager:
    """The cache entry of one key: ``CacheManager(key).get_group()`` / ``.put_group(files)``."""

    def __init__(self, key: str, root: str | os.PathLike | None = None):
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"a cache key must be a plain name such as make_key(...)'s hex digest, got {key!r}")
        self.key = key
        self.root = Path(root) if root is not None else cache_dir()
        self.path = self.root / key

    # -- reading --------------------------------------------------------------------------------
    def get_group(self) -> dict[str, bytes] | None:
        """The files of this entry, verified against the manifest, or ``None`` on a miss."""
        return None if always_compile() else self._load()

    def _load(self) -> dict[str, bytes] | None:
        if not self.path.is_dir():
            return None
        try:
            manifest = json.loads((self.path / MANIFEST).read_bytes())
            expected = manifest["files"]
            if manifest.get("format") != _FORMAT or not isinstance(expected, dict):
                raise ValueError("unknown manifest format")
            files = {name: (self.path / name).read_bytes() for name in expected}
            if any(_sha256(data) != expected[name] for name, data in files.items()):
                raise ValueError("checksum mismatch")
        except (OSError, ValueError, KeyError, TypeError):
            # Also reached when another process removed the entry while we read it; removing
            # again is harmless and the caller recompiles either way.
            self.remove()
            return None
        return files

    def get_file(self, name: str) -> bytes | None:
        group = self.get_group()
        return None if group is None else group.get(name)

    def file_path(self, name: str) -> Path:
        """Where ``name`` lives once the entry exists (valid only after ``get_group`` hit)."""
        _check_name(name)
        return self.path / name

    # -- writing --------------------------------------------------------------------------------
    def put_group(self, files: Mapping[str, bytes | str]) -> dict[str, Path]:
        """Store ``files`` (text is written as UTF-8) as this key's entry; returns their paths.

        If a valid entry already exists (another process won the race) it is kept and ours is
        discarded: both were compiled from the same key, so either is right."""
        for name in files:
            _check_name(name)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{self.key}-{os.getpid()}-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            digests = {}
            for name, data in files.items():
                blob = data.encode() if isinstance(data, str) else bytes(data)
                (tmp / name).write_bytes(blob)
                digests[name] = _sha256(blob)
            # The manifest is written last: an entry without a readable manifest is invalid.
            (tmp / MANIFEST).write_text(json.dumps({"format": _FORMAT, "key": self.key, "files": digests}))
            for _ in range(3):
                try:
                    os.rename(tmp, self.path)
                    break
                except OSError:
                    if not self.path.exists():
                        continue  # it vanished between our rename and this check: try again
                    if self._load() is not None:
                        break  # someone else's complete entry: keep it
                    # get_group removed a corrupt entry; retry the rename
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return {name: self.path / name for name in files}

    def remove(self) -> None:
        """Delete this entry.  It is first renamed aside so that no reader sees it half-deleted."""
        trash = self.root / f".tmp-trash-{self.key}-{uuid.uuid4().hex}"
        try:
            os.rename(self.path, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)


_TRITON_KEY: str | None = None


def triton_key() -> str:
    """The compiler's version and a hash of its sources (Triton's ``triton.runtime.cache.triton_key``):
    a changed compiler never matches a key taken before."""
    global _TRITON_KEY
    if _TRITON_KEY is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _TRITON_KEY = f"{__version__}-{h.hexdigest()}"
    return _TRITON_KEY


# --- the binary where Triton's cache would hold it ---------------------------------------------------
#: parameter types a launcher outside Tritium may pass by value (PyTorch Inductor's static CUDA
#: launcher's list): pointers (``*...``) and these scalars; a kernel with any other leaves no copy
_PLAIN_TYPES = frozenset({"i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64",
                          "fp16", "bf16", "fp32", "f32", "fp64"})


def triton_path_key(kernel_hash: str) -> str:
    """The folder name Triton's cache layout gives a kernel's hash: this module has no ``_base64``
    or ``_base32`` (Triton 3.x encodes the hash with one of them), so readers that look those up
    here, as PyTorch Inductor does, use the hash as it is."""
    for encode in ("_base64", "_base32"):
        fn = globals().get(encode)
        if fn is not None:
            return fn(kernel_hash)
    return kernel_hash


def plain_launch_params(kernel) -> list[str] | None:
    """The types of the values a plain launch passes, in order (the signature without its
    constexprs), where the compiled kernel takes exactly those: one CTA a program, no cluster, no
    global scratch, its entry symbol the function's name and one parameter each.  None otherwise."""
    src = getattr(kernel, "src", None)
    fn = getattr(src, "fn", None)
    meta = kernel.metadata
    if fn is None or src.name != fn.__name__ or kernel.name != fn.__name__:
        return None
    if int(meta.get("num_ctas", 1) or 1) != 1 or meta.get("cluster_pairs") or int(meta.get("global_scratch_size", 0) or 0):
        return None
    constants = set(src.constants)
    types = []
    for i, name in enumerate(fn.arg_names):
        ty = src.signature.get(name)
        if ty == "constexpr" or (i,) in constants:
            continue
        if not isinstance(ty, str) or not (ty.startswith("*") or ty in _PLAIN_TYPES):
            return None
        types.append(ty)
    ptx = kernel.asm.get("ptx")
    if isinstance(ptx, str):  # the entry must declare exactly these parameters
        start = ptx.find(f".entry {fn.__name__}(")
        if start < 0 or ptx.count(".param", start, ptx.find(")", start)) != len(types):
            return None
    return types


def publish_binary(kernel) -> Path | None:
    """Put a copy of an NVIDIA kernel's ``cubin`` where Triton's cache keeps it,
    ``$TRITON_CACHE_DIR/<hash>/<name>.cubin``, when ``TRITON_CACHE_DIR`` is set and the kernel takes
    a plain launch (:func:`plain_launch_params`).  PyTorch Inductor sets that variable before it
    compiles and then looks there: a kernel it finds is launched by its own C++ launcher (its
    "static CUDA launcher") as Triton's kernels are; otherwise through ``kernel.run``.  Returns the
    path, or None where no copy was made; a failed write is not an error."""
    root = os.environ.get("TRITON_CACHE_DIR")
    binary = kernel.asm.get("cubin") if root else None
    if not isinstance(binary, (bytes, bytearray)) or plain_launch_params(kernel) is None:
        return None
    path = Path(root) / triton_path_key(kernel.hash) / f"{kernel.name}.cubin"
    if path.exists():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp.{uuid.uuid4().hex}.cubin")
        tmp.write_bytes(binary)
        os.replace(tmp, path)
    except OSError:
        return None
    return path
