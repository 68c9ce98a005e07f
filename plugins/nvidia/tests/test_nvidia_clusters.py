"""``num_ctas`` > 1 on sm_90: a program is a thread-block cluster.  CPU checks of the PTX (cluster
ids for program ids and counts, the non-leading CTAs leaving at entry, the metadata the launcher
reads) and, with a device, results against numpy."""
import numpy as np
import pytest

import tritium as triton
import tritium.language as tl


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + tl.num_programs(0), mask=mask)


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


@pytest.mark.parametrize("ctas", [2, 4, 16])
def test_program_ids_are_cluster_ids(ctas):
    k = triton.compile(scale_kernel, signature=SIG, constexprs={"BLOCK": 128}, target="cuda:90", num_ctas=ctas)
    ptx = k.asm["ptx"]
    assert "%clusterid.x" in ptx and "%nclusterid.x" in ptx
    assert "%ctaid.x" not in ptx and "%nctaid.x" not in ptx
    # the CTAs of rank > 0 return before any of the program's work
    entry = ptx[ptx.index(".entry"):]
    assert entry.index("%cluster_ctarank") < entry.index("%clusterid.x")
    assert k.metadata["num_ctas"] == ctas


def test_one_cta_reads_cta_ids():
    ptx = triton.compile(scale_kernel, signature=SIG, constexprs={"BLOCK": 128}, target="cuda:90").asm["ptx"]
    assert "%ctaid.x" in ptx and "cluster" not in ptx


@pytest.mark.parametrize("target", ["cuda:80", "cuda:89"])
def test_clusters_need_sm90(target):
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        triton.compile(scale_kernel, signature=SIG, constexprs={"BLOCK": 128}, target=target, num_ctas=2)


def _device_is_sm90():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.skipif(not _device_is_sm90(), reason="needs a CUDA device of sm_90 or newer")
@pytest.mark.parametrize("ctas", [1, 2, 4, 8, 16])
def test_cluster_launch_runs_each_program_once(ctas):
    import torch
    n, block = 5000, 128
    x = torch.rand(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    grid = (triton.cdiv(n, block),)
    scale_kernel[grid](x, y, n, BLOCK=block, num_ctas=ctas, backend="nvidia")
    want = x.double().cpu().numpy() * 2 + grid[0]
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-6)
