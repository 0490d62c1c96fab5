"""Benchmarks: josefk against Tansu, alternated in one run (``python -m bench``).

Nothing here is a test; pytest does not collect it (no ``test_*`` names).  See bench/README.md.
"""
