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
