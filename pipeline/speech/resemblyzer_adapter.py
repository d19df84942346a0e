"""The only module that imports Resemblyzer: a speaker-embedding callable with the interface pyannote's
SpeakerDiarization expects of `_embedding` (sample_rate, dimension, metric, min_num_samples, __call__).

Resemblyzer's d-vector weights ship inside its PyPI wheel, so the embedded diarization needs no model hub.
Each (chunk, local speaker) mask selects that speaker's samples; `preprocess_wav` normalises volume and trims
long silences (measured: better separation of real voices); all partial utterances of a batch go through the
LSTM in one forward pass.
"""

from __future__ import annotations

import time
from importlib import metadata
from typing import Any

import numpy as np

_RATE = 1.3  # Resemblyzer's default rate of 1.6 s partial utterances per second
_MIN_COVERAGE = 0.75


class ResemblyzerEmbedding:
    sample_rate = 16_000
    dimension = 256
    metric = "cosine"
    min_num_samples = 8_000  # below 0.5 s of a speaker's own speech an embedding says little: NaN (skipped)

    def __init__(self, device: str = "cpu") -> None:
        from resemblyzer import VoiceEncoder

        self.encoder = VoiceEncoder(device, verbose=False)
        self.inference_seconds = 0.0

    @property
    def name(self) -> str:
        return f"resemblyzer=={metadata.version('resemblyzer')} (d-vector, 256-dim, weights from the wheel)"

    def _speaker_samples(self, waveform: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        from resemblyzer import preprocess_wav

        if mask is not None:
            index = np.minimum(np.arange(waveform.size) * mask.size // waveform.size, mask.size - 1)
            waveform = waveform[mask[index] > 0.5]
        if waveform.size < self.min_num_samples:
            return waveform[:0]
        return preprocess_wav(waveform, source_sr=self.sample_rate)

    def __call__(self, waveforms: Any, masks: Any = None) -> np.ndarray:
        """(batch, 1, samples) waveforms and (batch, frames) masks -> (batch, 256) embeddings, NaN where the
        masked speech is too short."""
        import torch
        from resemblyzer import audio as resemblyzer_audio

        began = time.perf_counter()
        batch = waveforms.shape[0]
        out = np.full((batch, self.dimension), np.nan, dtype=np.float32)
        mels, owners = [], []
        for item in range(batch):
            mask = None if masks is None else masks[item].cpu().numpy()
            speech = self._speaker_samples(waveforms[item, 0].cpu().numpy(), mask)
            if speech.size < self.min_num_samples:
                continue
            wav_slices, mel_slices = self.encoder.compute_partial_slices(speech.size, _RATE, _MIN_COVERAGE)
            if wav_slices[-1].stop >= speech.size:
                speech = np.pad(speech, (0, wav_slices[-1].stop - speech.size))
            mel = resemblyzer_audio.wav_to_mel_spectrogram(speech)
            mels.extend(mel[s] for s in mel_slices)
            owners.extend([item] * len(mel_slices))
        if mels:
            with torch.inference_mode():
                partial = self.encoder(torch.from_numpy(np.asarray(mels)).to(self.encoder.device)).cpu().numpy()
            owner = np.asarray(owners)
            for item in np.unique(owner):
                mean = partial[owner == item].mean(axis=0)
                out[item] = mean / np.linalg.norm(mean)
        self.inference_seconds += time.perf_counter() - began
        return out
