"""Helpers shared by the test modules: fluent object builders and stream readers."""
