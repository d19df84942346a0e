"""Model pre-annotation: draft values for every label field of a row, pushed to Label Studio as predictions.

`drafts` holds the records every backend returns and every reader (push, acceptance) takes.
"""
