"""The folder that python -m tritium.run_as_triton puts on PYTHONPATH: its ``triton`` package
installs Tritium under Triton's name (see tritium.triton_alias)."""
