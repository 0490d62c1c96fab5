"""The one native helper (wire/_recscan.c: record walking for produce validation); everything
else is declared in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("wire._recscan", ["wire/_recscan.c"], extra_compile_args=["-O2"])])
