"""Shared helpers of the test suite: generated logs, brute-force references."""
