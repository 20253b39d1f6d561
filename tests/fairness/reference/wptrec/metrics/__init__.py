"""Not the track's file: its ``wptrec/metrics/__init__.py`` also imports ``under.py`` (not copied)."""
