"""The on-disk cache: round trip, corruption handling, and concurrent writers and readers."""
from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from tritium.runtime.cache import MANIFEST, CacheManager, always_compile, cache_dir, make_key

FILES = {"kernel.ttir": "module {}\n", "kernel.cubin": b"\x7fELF\x00\x01", "kernel.json": '{"name": "k"}'}


@pytest.fixture(autouse=True)
def _root(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRITIUM_ALWAYS_COMPILE", raising=False)
    return tmp_path / "cache"


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITIUM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "tritium"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "tritium"


def test_make_key():
    assert make_key("a", 1) == make_key("a", 1)
    assert len(make_key("x")) == 64
    assert make_key("ab", "c") != make_key("a", "bc")
    assert make_key(b"ab") == make_key("ab")


def test_round_trip(_root):
    c = CacheManager(make_key("kernel"))
    assert c.get_group() is None
    paths = c.put_group(FILES)
    assert paths["kernel.cubin"] == _root / c.key / "kernel.cubin"
    group = CacheManager(c.key).get_group()
    assert group == {k: v.encode() if isinstance(v, str) else v for k, v in FILES.items()}
    assert c.get_file("kernel.cubin") == FILES["kernel.cubin"]
    assert c.get_file("kernel.ptx") is None
    assert not [p for p in _root.iterdir() if p.name.startswith(".tmp")]


def test_always_compile_misses_but_still_writes(monkeypatch):
    c = CacheManager(make_key("k"))
    monkeypatch.setenv("TRITIUM_ALWAYS_COMPILE", "1")
    assert always_compile()
    c.put_group(FILES)
    assert c.get_group() is None
    monkeypatch.delenv("TRITIUM_ALWAYS_COMPILE")
    assert c.get_group() is not None


@pytest.mark.parametrize("damage", ["flip_byte", "delete_file", "truncate_manifest", "garbage_manifest",
                                    "no_manifest", "manifest_wrong_format"])
def test_corrupt_entry_is_a_miss_and_removed(damage):
    c = CacheManager(make_key("k", damage))
    c.put_group(FILES)
    entry = c.path
    if damage == "flip_byte":
        (entry / "kernel.cubin").write_bytes(b"\x7fELF\x00\x02")
    elif damage == "delete_file":
        (entry / "kernel.ttir").unlink()
    elif damage == "truncate_manifest":
        text = (entry / MANIFEST).read_text()
        (entry / MANIFEST).write_text(text[: len(text) // 2])
    elif damage == "garbage_manifest":
        (entry / MANIFEST).write_bytes(b"\xff\xfe not json")
    elif damage == "no_manifest":
        (entry / MANIFEST).unlink()
    else:
        (entry / MANIFEST).write_text(json.dumps({"format": 99, "files": {}}))
    assert c.get_group() is None
    assert not entry.exists()
    c.put_group(FILES)  # recompiled and stored again
    assert c.get_group() is not None


def test_put_replaces_a_corrupt_entry_and_keeps_a_valid_one():
    c = CacheManager(make_key("k"))
    c.put_group(FILES)
    c.put_group({"kernel.ttir": "other"})  # the existing valid entry wins
    assert c.get_file("kernel.ttir") == b"module {}\n"
    (c.path / "kernel.ttir").write_text("tampered")
    c.put_group({"kernel.ttir": "fresh"})
    assert c.get_group() == {"kernel.ttir": b"fresh"}


def test_bad_names_are_rejected():
    with pytest.raises(ValueError, match="plain name"):
        CacheManager("../escape")
    with pytest.raises(ValueError, match="plain file names"):
        CacheManager(make_key("k")).put_group({"../x": b""})
    with pytest.raises(ValueError, match="plain file names"):
        CacheManager(make_key("k")).put_group({MANIFEST: b""})


def _writer(root, key, worker, rounds, results):
    os.environ["TRITIUM_CACHE_DIR"] = root
    ok, hits = True, 0
    for i in range(rounds):
        c = CacheManager(key)
        group = c.get_group()
        if group is None:
            blob = bytes([worker]) * 200_000
            c.put_group({"a.bin": blob, "b.bin": blob})
            group = c.get_group()  # may be None again: another worker may have removed it
        if group is not None:
            # Whatever a reader sees must be a complete, self-consistent group from one writer.
            hits += 1
            ok &= group["a.bin"] == group["b.bin"] and len(group["a.bin"]) == 200_000
        if i % 5 == 4:
            c.remove()  # keep the race going: entries disappear and get rewritten
    results.put(ok and hits > 0)


def test_concurrent_writers_and_readers(_root):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    key = make_key("shared")
    procs = [ctx.Process(target=_writer, args=(str(_root), key, w, 30, results)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 6
    assert all(results.get(timeout=5) for _ in procs)
    assert not [p for p in _root.iterdir() if p.name.startswith(".tmp")]
