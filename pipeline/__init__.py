"""RESCUE-BENCH construction pipeline: video -> transcripts -> rows -> labels -> gold -> tasks."""

__version__ = "0.1.0"
