"""Published pandas pipelines run in plain pandas and on a protected frame, step by step (tests/test_pipelines.py).

Each module holds one pipeline from pandas' documentation, a book or a tutorial, on real data that an installable
package ships (``data.py``); ``harness.py`` runs its steps on both sides and sorts each into one of six categories.
"""
