"""CPU checks of ``bench/inductor_kernels.py`` (the run itself needs a GPU and Triton): the models
build and run eagerly, poisoning and comparing arguments, and a worker that dies mid-way."""
import importlib.util
import json
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the bench compiles PyTorch models")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("inductor_kernels")
models = _load("inductor_models")


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_models_run_eagerly_on_the_cpu(name):
    torch.manual_seed(0)
    model, inputs, backward, options = models.MODELS[name]("cpu")
    out = model(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    assert all(isinstance(o, torch.Tensor) for o in outs) and isinstance(options, dict)
    if backward:
        sum(o.float().sum() for o in outs if o.requires_grad).backward()
        assert any(p.grad is not None for p in list(getattr(model, "parameters", lambda: [])()) +
                   [i for i in inputs if isinstance(i, torch.Tensor) and i.requires_grad])


def test_poison_marks_only_outputs_and_compare_finds_the_first_difference():
    a = [torch.ones(4), torch.zeros(3, dtype=torch.int32), torch.zeros(2, dtype=torch.int64), 5]
    names = ["in_ptr0", "out_ptr0", "out_ptr1", "xnumel"]
    bench.poison(a, names)
    assert torch.equal(a[0], torch.ones(4)) and (a[1] != 0).all() and (a[2] != 0).all()
    b = [t.clone() if isinstance(t, torch.Tensor) else t for t in a]
    assert bench.compare(a, b, names, False) is None
    f = [torch.full((4,), float("nan")), torch.ones(2)]
    g = [torch.full((4,), float("nan")), torch.tensor([1.0, 1.5])]
    msg = bench.compare(f, g, ["out_ptr0", "out_ptr1"], False)
    assert msg.startswith("out_ptr1: 1/2 differ, first at (1,): 1.5 vs 1.0") and "max abs err 0.5" in msg
    assert bench.compare([torch.ones(2)], [torch.ones(2) + 1e-3], ["out_ptr0"], True) is None  # dot tolerance


_FAKE_WORKER = r"""
import json, os, sys
files = sys.argv[sys.argv.index("--files") + 1].split(",") if "--files" in sys.argv else ["a.py", "b.py", "c.py"]
if "--model" in sys.argv:
    print("@@FILES " + json.dumps({"files": files}), flush=True)
for f in files:
    print("@@START " + f, flush=True)
    if f == "b.py":
        sys.stderr.write("CUDA error: an illegal memory access was encountered\n")
        os._exit(3)
    print("@@RESULT " + json.dumps({"kernel": f[:-3], "file": f, "status": "match", "detail": ""}), flush=True)
"""


class _FakeJob(bench.Job):
    def start(self, args):
        import subprocess
        self.proc = subprocess.Popen([sys.executable, "-c", _FAKE_WORKER, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)


def test_a_crashed_worker_is_reported_and_restarted_on_the_rest():
    import time
    job = _FakeJob("m", ["--cache", "x", "--model", "m"], dict(os.environ), time.time() + 60)
    job.run_to_end("x")
    by_file = {r["file"]: r for r in job.results}
    assert by_file["a.py"]["status"] == "match" and by_file["c.py"]["status"] == "match"
    assert by_file["b.py"]["status"] == "error" and "illegal memory access" in by_file["b.py"]["detail"]
    assert all(r["model"] == "m" for r in job.results)
    text = bench.table(job.results)
    assert text.splitlines()[-1] == "TOTAL 3 kernels from 1 models: 1 error, 2 match"
    json.dumps(job.results)  # what --json writes


def test_kernel_files_are_the_generated_kernels_not_the_wrapper(tmp_path):
    src = open(os.path.join(ROOT, "tests", "tools", "inductor_files", "poi_fused_add_exp_maximum.py")).read()
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "kernel.py").write_text(src)
    wrapper = "# AOT ID: ['0_inference']\nasync_compile = None\nk = '''\n" + src + "\n'''\n\ndef call(args):\n    pass\n"
    (tmp_path / "ab" / "wrapper.py").write_text(wrapper)
    (tmp_path / "ab" / "broken.py").write_text("def get_args(:\n")
    assert bench.kernel_files(str(tmp_path)) == {str(tmp_path / "ab" / "kernel.py")}
