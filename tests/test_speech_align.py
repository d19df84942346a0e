"""Word times from whisperx's wav2vec2 alignment, and the fallback when no alignment model loads.

No wav2vec2 alignment model ships in any package and the hub is unreachable here, so the alignment path is
driven by a tiny, randomly initialised wav2vec2 (a real transformers model, saved to a folder) and a minimal
`punkt_tab` folder: this checks the wiring (model loading, whisperx.align, regrouping of words, the record),
not timing quality, which a random model cannot have.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.project import Project
from pipeline.speech import audio as wav
from pipeline.speech.settings import AsrSettings, resolve_asr
from pipeline.speech.transcribe import loaded_asr
from tests.speech_fixtures import COUPLE


@pytest.fixture
def tiny_wav2vec2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    folder = tmp_path / "wav2vec2"
    folder.mkdir()
    letters = ["<pad>", "<s>", "</s>", "<unk>", "|", *"abcdefghijklmnopqrstuvwxyz'"]
    (folder / "vocab.json").write_text(json.dumps({c: i for i, c in enumerate(letters)}), encoding="utf-8")
    tokenizer = Wav2Vec2CTCTokenizer(str(folder / "vocab.json"), word_delimiter_token="|")
    extractor = Wav2Vec2FeatureExtractor(sampling_rate=16_000)
    Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer).save_pretrained(folder)
    config = Wav2Vec2Config(vocab_size=len(letters), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=37, conv_dim=(32, 32, 32, 32, 32, 32, 32),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
    Wav2Vec2ForCTC(config).save_pretrained(folder)
    punkt = tmp_path / "nltk_data" / "tokenizers" / "punkt_tab" / "english"
    punkt.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (punkt / name).write_text("", encoding="utf-8")
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "nltk_data"))
    return folder


def test_alignment_model_times_the_words(built_samples: Project, tiny_wav2vec2: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from nltk import redos

    from pipeline.speech import whisperx_adapter

    # NLTK's wall-clock regex limit, shrunk so that any sentence split still under it fails here (CI once
    # failed a session when a loaded machine stalled past the real 5 s): the adapter must lift it for alignment.
    monkeypatch.setattr(redos, "DEFAULT_TIMEOUT", 1e-9)

    loaded = loaded_asr(resolve_asr(AsrSettings(align_model=str(tiny_wav2vec2))))
    assert loaded.word_timing == "whisperx-align" and loaded.align_model == str(tiny_wav2vec2)
    samples = wav.read_span(built_samples.session_dir("media", COUPLE) / "audio.wav", 0.0, 20.0)
    segments = whisperx_adapter.transcribe(loaded, samples, offset=100.0)
    words = [w for s in segments for w in s.words]
    assert len(words) > 20
    assert all(s.start <= w.start <= w.end <= s.end for s in segments for w in s.words)
    assert all(100.0 <= w.start < 120.0 for w in words)
    assert " ".join(w.text for w in words).lower().startswith("welcome back")
    assert redos.DEFAULT_TIMEOUT == 1e-9, "the limit is restored for everything else"


@pytest.mark.slow  # the real speech models, run by the test itself
def test_unloadable_alignment_model_falls_back_and_says_so(tmp_path: Path) -> None:
    loaded = loaded_asr(resolve_asr(AsrSettings(align_model=str(tmp_path / "no-such-model"))))
    assert loaded.word_timing == "faster-whisper" and loaded.align is None
    assert any("unavailable" in w and "faster-whisper" in w for w in loaded.warnings)
