"""
Support code for Fair TREC 2022.
"""