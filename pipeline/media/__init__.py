"""Media stage family: probing, audio extraction, clips and keyframes (ingest)."""
