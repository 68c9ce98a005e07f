# The import package `tritium` lives in core/; setuptools needs the mapping spelled out.
from setuptools import find_packages, setup

setup(
    packages=["tritium"] + ["tritium." + p for p in find_packages("core")],
    package_dir={"tritium": "core"},
    package_data={"tritium": ["py.typed"]},
)
