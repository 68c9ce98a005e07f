"""``toy``: a compile-only backend written from ``docs/hooks.md`` alone, kept as the test of that
page.  Its target ``toy:1`` is a 32-lane SIMT machine that stops at LLVM IR: thread ids, warp
shuffles, barriers, printf and assertions are calls to ``toy_*`` functions a runtime would provide,
shared memory is an ``addrspace(3)`` array, and everything else is plain LLVM IR.  Its driver has no
device; it checks each compiled module by parsing and verifying it with LLVM.

Register it in-process (``tritium.hooks.manager.register_plugin("tritium_toy.plugin:plugin")``)
or with ``TRITIUM_PLUGINS=tritium_toy.plugin:plugin`` (``tests/plugins`` on ``sys.path``)."""
