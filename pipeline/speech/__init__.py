"""Speech stages: transcribe (WhisperX or subtitles), diarize (pyannote.audio), rows (words -> speakers ->
participants -> interaction units, exports, clips) and transcript scoring (WER, DER).

Heavy libraries are imported lazily, each by exactly one adapter module: `whisperx_adapter` (whisperx,
faster-whisper, CTranslate2), `pyannote_adapter` (pyannote.audio), `resemblyzer_adapter` (Resemblyzer),
`pyannote_core_adapter` (pyannote.core, pyannote.metrics).
"""
