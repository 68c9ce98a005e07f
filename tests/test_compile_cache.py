"""The compile API's on-disk cache: a second compile reuses the entry, a corrupt entry is compiled
again (never trusted), and the key covers the compiler's and the backend plugin's own sources."""
import json

import numpy as np

import tritium
from tritium.compiler.stage_runner import fingerprint
from tritium.examples.vector_add import add_kernel
from tritium.hooks import manager

SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


def _compile(block):
    return tritium.compile(add_kernel, signature=SIG, constexprs={"BLOCK_SIZE": block}, target="interpreter")


def test_cache_hit_and_corrupt_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))
    first = _compile(128)
    entries = [p for p in tmp_path.rglob("add_kernel.ttir")]
    assert len(entries) == 1
    meta = json.loads((entries[0].parent / "add_kernel.json").read_text())
    assert meta["stages"] == ["ttir", "interp"]
    assert _compile(128).asm["ttir"] == first.asm["ttir"]  # served from the cache
    entries[0].write_text("tt.func garbage")  # corrupt it behind the cache's back
    again = _compile(128)
    assert again.asm["ttir"] == first.asm["ttir"]
    x = np.random.default_rng().random(128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    again[(1,)](x, x, out, 128)
    np.testing.assert_array_equal(out, x + x)


def test_key_covers_the_plugin_sources():
    nv = [b for b in manager.list_backends() if b.name != "interpreter"]
    interp = manager.get_backend("interpreter")
    for b in nv:
        assert fingerprint(b) != fingerprint(interp)
