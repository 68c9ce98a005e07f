# The import package `tritium` lives in core/; setuptools needs the mapping spelled out.
# Namespace discovery finds every sub-package, with or without an __init__.py, so a wheel never
# loses one (it once lost `tritium.backends` and with it the embedded interpreter).
from setuptools import find_namespace_packages, setup

# The conformance suite ships too (top-level package ``conformance``): a vendor team runs
# ``tritium conformance`` against its installed plugin.
setup(
    packages=["tritium"] + ["tritium." + p for p in find_namespace_packages("core", exclude=["*__pycache__*"])]
    + ["conformance"] + ["conformance." + p for p in find_namespace_packages("conformance", exclude=["*__pycache__*"])],
    package_dir={"tritium": "core", "conformance": "conformance"},
    package_data={"tritium": ["py.typed"], "": ["*.json"]},
)
