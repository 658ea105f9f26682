"""Hostile input for every parser: property tests with a bounded number of examples each.

Each module holds ``TARGETS``: named (strategy, check) pairs that its tests run and that
``bench/bench_fuzz.py`` runs again for a fixed time per parser.
"""
