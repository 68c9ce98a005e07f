"""``tritium.tools``: host-side helpers with ``triton.tools``' names."""
