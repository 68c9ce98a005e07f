"""AMD software pipelining (``tritonamdgpu-stream-pipeline``, the core ``pipeline`` pass with the
``registers`` schedule): the TTGIR's shape and, in the AMDGCN, the main loop's global loads of the
next iteration issued before its matrix instructions."""
import re

import pytest

import tritium
import tritium.language as tl

pytest.importorskip("tritium_amd")


@tritium.jit
def mm(a_ptr, b_ptr, c_ptr, K, stride_am: tl.constexpr, stride_bk: tl.constexpr, BM: tl.constexpr,
       BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
CONSTS = {"BM": 64, "BN": 64, "BK": 32, "stride_am": 256, "stride_bk": 256}


def _compile(target, num_stages=2, aligned=True):
    attrs = {n: {"tt.divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "K")} if aligned else {}
    return tritium.compile(mm, signature=SIG, constexprs=CONSTS, target=target, num_stages=num_stages, attrs=attrs)


def _loop_body(ttgir: str) -> str:
    loop = ttgir[ttgir.index("scf.for"):]
    return loop[:loop.index("scf.yield")]


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_ttgir_loads_of_the_next_iteration_before_the_dot(target):
    ttgir = _compile(target).asm["ttgir"]
    body = _loop_body(ttgir)
    prologue = ttgir[:ttgir.index("scf.for")]
    # iteration 0 is loaded and stored into the operand buffers before the loop
    assert prologue.count("ttg.local_store") == 2 and prologue.count("ttg.local_alloc") == 2
    # in the loop: loads of i + 1 (predicated on i + 1 existing), LDS reads, the dot, then the stores
    assert body.count("tt.load") == 2 and body.count("ttg.local_load") == 2 and body.count("ttg.local_store") == 2
    assert body.rindex("tt.load") < body.index("ttg.local_load") < body.index("tt.dot") < body.index("ttg.local_store")
    assert "ttg.convert_layout" not in body
    # the loop carries the accumulator and the addresses of iteration i + 1
    head = ttgir[ttgir.index("scf.for"):]
    assert head[:head.index("\n")].count("!tt.ptr<f16>") == 2
    # membar: one barrier before the LDS reads (the stores of the previous iteration), one before the stores
    assert body.count("ttg.barrier") == 2
    assert body.index("ttg.barrier") < body.index("ttg.local_load")
    assert body.index("tt.dot") < body.rindex("ttg.barrier") < body.index("ttg.local_store")


@pytest.mark.parametrize("target", ["hip:gfx942", "hip:gfx1100"])
def test_three_stages_two_slots(target):
    k = _compile(target, num_stages=3)
    ttgir = k.asm["ttgir"]
    body = _loop_body(ttgir)
    assert "memdesc<2x64x32xf16" in ttgir and "memdesc<2x32x64xf16" in ttgir
    prologue = ttgir[:ttgir.index("scf.for")]
    assert prologue.count("tt.load") == 4  # iterations 0 and 1
    # both stored before the loop, into slots 0 and 1 (disjoint: no barrier between the stores)
    stores = prologue[prologue.index("ttg.local_store"):]
    assert stores.count("ttg.local_store") == 4 and "ttg.barrier" not in stores
    assert body.index("tt.load") < body.index("ttg.local_load") < body.index("tt.dot") < body.index("ttg.local_store")
    # the loop stores what it loaded into the slot it read: the same views
    read = {ln.split("ttg.local_load ")[1].split()[0] for ln in body.splitlines() if "ttg.local_load " in ln}
    written = {ln.split("ttg.local_store ")[1].split()[1] for ln in body.splitlines() if "ttg.local_store " in ln}
    assert len(read) == 2 and written == read
    assert "v_mfma" in k.asm["amdgcn"] or "v_wmma" in k.asm["amdgcn"]
    assert k.metadata.get("lds", 0) >= 2 * (64 * 32 + 32 * 64) * 2


def test_buffers_that_do_not_fit_in_lds_leave_the_loop_unpipelined():
    # 128x256 + 256x128 fp16 tiles: 128 KiB of buffers; the loop stays as it was, and fits
    k = tritium.compile(mm, signature=SIG, constexprs={**CONSTS, "BM": 128, "BN": 128, "BK": 256}, target="hip:gfx942",
                        num_stages=2, attrs={n: {"tt.divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "K")},
                        stage="ttgir")
    ttgir = k.asm["ttgir"]
    assert "ttg.local_store" not in ttgir and "ttg.convert_layout" in _loop_body(ttgir)
    shared = int(re.search(r"ttg.shared = (\d+)", ttgir).group(1))
    assert 0 < shared <= 64 * 1024


def test_num_stages_1_and_narrow_loads_are_not_pipelined():
    assert "ttg.local_store" not in _compile("hip:gfx942", num_stages=1).asm["ttgir"]
    # without alignment the loads move 16 bits at a time: Triton's pipeliner leaves those alone too
    assert "ttg.local_store" not in _compile("hip:gfx942", aligned=False).asm["ttgir"]


def _execution_order(asm: str) -> list[str]:
    """The mnemonics of the loop holding the matrix instructions, in the order one iteration runs
    them: LLVM rotates the loop, so the walk starts where the code before the loop branches in."""
    lines = [ln.strip() for ln in asm.splitlines()]
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.match(r"^\.LBB\d+_\d+:$", ln)}
    best = None
    for i, ln in enumerate(lines):
        m = re.match(r"^s_(?:c)?branch\w*\s+(\.LBB\d+_\d+)", ln)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            lo = labels[m.group(1)]
            n = sum(x.startswith(("v_mfma", "v_wmma")) for x in lines[lo:i + 1])
            if n and (best is None or n > best[2]):
                best = (lo, i, n)
    assert best is not None, "no loop with matrix instructions"
    lo, hi, _ = best
    entry = lo
    for i in range(lo - 1, -1, -1):  # the branch into the loop just above it, if any
        m = re.match(r"^s_branch\s+(\.LBB\d+_\d+)", lines[i])
        if m and m.group(1) in labels and lo < labels[m.group(1)] <= hi:
            entry = labels[m.group(1)]
            break
        if lines[i] and not lines[i].startswith((";", ".")):
            break
    order = lines[entry:hi + 1] + lines[lo:entry]
    return [ln.split()[0] for ln in order if ln and not ln.startswith((";", "."))]


@pytest.mark.parametrize("target, load, matrix", [("hip:gfx942", "global_load_dwordx4", "v_mfma"),
                                                  ("hip:gfx1100", "global_load_b128", "v_wmma")])
def test_amdgcn_main_loop_loads_before_matrix_instructions(target, load, matrix):
    order = _execution_order(_compile(target).asm["amdgcn"])
    loads = [i for i, m in enumerate(order) if m.startswith((load, "buffer_load_dwordx4"))]
    mats = [i for i, m in enumerate(order) if m.startswith(matrix)]
    writes = [i for i, m in enumerate(order) if m.startswith(("ds_write", "ds_store"))]
    assert loads and mats and writes
    # the next tiles are requested before the first matrix instruction and written to LDS after it
    assert max(loads) < min(mats) < min(writes)
