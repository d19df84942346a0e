"""Synthetic therapy-interview sample sessions (couple and family) with known ground truth.

`make_samples(dest)` writes, per session, `<stem>.mp4`, `<stem>.srt` and `<stem>.truth.json`.
"""

from pipeline.sample.make import GeneratedSample, make_samples

__all__ = ["GeneratedSample", "make_samples"]
