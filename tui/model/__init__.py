"""The explorer's pure side: state, values, rows, views, chart data, scales, measurements.

Nothing in this package imports Textual (tests/test_import_hygiene.py checks it):
every function takes values and returns values, so each is tested without an app.
"""
