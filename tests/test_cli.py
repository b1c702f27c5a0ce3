"""The command-line tools: `python -m transformer.translate` and `python -m transformer.evaluate`."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from transformer import translate
from transformer.training import evaluate
from transformer.translator import load_pretrained

ROOT = Path(__file__).resolve().parents[1]
FLAGSHIP = ROOT / "checkpoints" / "multi30k-en-de"
# Our own sentences and our own German references, never Multi30k text.
SOURCES = ["A small boy is throwing stones into the river.", "Two old men sit on a green bench.",
           "A woman in a red dress is dancing."]
REFERENCES = ["Ein kleiner Junge wirft Steine in den Fluss.", "Zwei alte Männer sitzen auf einer grünen Bank.",
              "Eine Frau in einem roten Kleid tanzt."]


pytestmark = pytest.mark.slow  # real processes: `pytest -m "not slow"` leaves it out


@pytest.fixture(scope="module")
def tr():
    return load_pretrained(FLAGSHIP)


def run_translate(argv: list[str], capsys, monkeypatch, stdin: str = "") -> tuple[int, list[str], str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = translate.main(["--checkpoint", str(FLAGSHIP), *argv])
    out = capsys.readouterr()
    return status, out.out.splitlines(), out.err


def test_sentences_as_arguments_match_the_api(tr, capsys, monkeypatch):
    status, lines, _ = run_translate(SOURCES[:2], capsys, monkeypatch)
    assert status == 0
    assert lines == [tr.translate(s, method="beam", beam_size=5, output_attentions=False).text for s in SOURCES[:2]]


def test_the_default_checkpoint_is_the_apps_default_model(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    sentence = "My name is Greta and I was born in 1987."  # en-de keeps both; multi30k-en-de loses the name
    assert translate.main([sentence]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [load_pretrained(ROOT / "checkpoints" / "en-de").translate(sentence, output_attentions=False).text]
    assert "Greta" in out[0] and "1987" in out[0]


def test_stdin_lines_keep_their_places_and_a_bad_line_is_reported(tr, capsys, monkeypatch):
    status, lines, err = run_translate(["--method", "greedy"], capsys, monkeypatch,
                                       stdin=f"{SOURCES[0]}\n   \n{SOURCES[1]}\n")
    assert status == 1 and "error: text is empty" in err
    expected = [tr.translate(s, method="greedy", output_attentions=False).text for s in SOURCES[:2]]
    assert lines == [expected[0], "", expected[1]]


def test_n_best_prints_rank_score_log_prob_and_text(tr, capsys, monkeypatch):
    status, lines, _ = run_translate(["--n-best", "3", "--beam-size", "4", SOURCES[2]], capsys, monkeypatch)
    rows = [line.split("\t") for line in lines]
    assert status == 0 and [r[0] for r in rows] == ["1", "2", "3"]
    scores = [float(r[1]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    candidates = tr.translate(SOURCES[2], method="beam", beam_size=4, output_attentions=False).candidates
    assert [r[3] for r in rows] == [c.text for c in candidates[:3]]


def test_bad_beam_size_and_missing_checkpoint_are_clear_errors(capsys, monkeypatch, tmp_path):
    status, lines, err = run_translate(["--beam-size", "17", SOURCES[0]], capsys, monkeypatch)
    assert status == 1 and lines == [""] and "beam_size must be a whole number from 1 to 16" in err
    assert translate.main(["--checkpoint", str(tmp_path / "nowhere"), SOURCES[0]]) == 2
    assert "error:" in capsys.readouterr().err


def test_piped_input_in_a_real_process(tr):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "transformer.translate", "--checkpoint", str(FLAGSHIP),
                             "--method", "greedy"], input=SOURCES[1] + "\n", capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [tr.translate(SOURCES[1], method="greedy", output_attentions=False).text]


@pytest.fixture
def files(tmp_path):
    src, ref = tmp_path / "src.en", tmp_path / "ref.de"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    ref.write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    return src, ref


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_evaluate_scores_with_sacrebleu(tr, files, tmp_path, capsys, method):
    src, ref = files
    out = tmp_path / "metrics.json"
    result = evaluate.main(["--checkpoint", str(FLAGSHIP), "--src-file", str(src), "--ref-file", str(ref),
                            "--method", method, "--beam-size", "3", "--out", str(out)])
    hypotheses = tr.translate_batch(SOURCES, method=method, beam_size=3)
    expected = sacrebleu.corpus_bleu(hypotheses, [REFERENCES])
    assert result["bleu"] == pytest.approx(expected.score, abs=1e-9)
    assert result["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [REFERENCES]).score, abs=1e-9)
    assert json.loads(out.read_text())["bleu"] == result["bleu"]
    assert capsys.readouterr().out.splitlines()[-1] == f"BLEU = {expected.score:.2f}"


@pytest.mark.parametrize("argv,message", [
    (["--beam-size", "0"], "--beam-size must be from 1 to 16"),
    (["--beam-size", "17"], "--beam-size must be from 1 to 16"),
])
def test_evaluate_rejects_bad_options(files, capsys, argv, message):
    src, ref = files
    with pytest.raises(SystemExit):
        evaluate.main(["--checkpoint", str(FLAGSHIP), "--src-file", str(src), "--ref-file", str(ref), *argv])
    assert message in capsys.readouterr().err


def test_evaluate_rejects_files_of_different_lengths(files, capsys):
    src, ref = files
    ref.write_text(REFERENCES[0] + "\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        evaluate.main(["--checkpoint", str(FLAGSHIP), "--src-file", str(src), "--ref-file", str(ref)])
    assert "has 3 lines but" in capsys.readouterr().err


@pytest.mark.parametrize("form, keep_case, prepare", [
    ("lowercase", False, str.lower),
    ("uppercase", False, str.lower),  # ALL CAPS is lowercased before tokenising, as in the app
    ("uppercase", True, str.upper),
    ("no-final-punct", False, lambda s: s[:-1]),
])
def test_evaluate_a_corpus_split_with_rewritten_sources(tr, tmp_path, form, keep_case, prepare):
    corpus = tmp_path / "mine"
    corpus.mkdir()
    (corpus / "val.en").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    (corpus / "val.de").write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    checkpoint = tmp_path / "checkpoint"
    checkpoint.symlink_to(FLAGSHIP, target_is_directory=True)
    argv = ["--checkpoint", str(checkpoint), "--corpus", "mine", "--data-dir", str(corpus), "--split", "val",
            "--source-form", form, "--method", "greedy", "--out", str(tmp_path / "m.json")]
    result = evaluate.main(argv + (["--keep-case"] if keep_case else []))
    hypotheses = [tr.model.tokenizer.decode(ids) for ids in translate_ids_of(tr, [prepare(s) for s in SOURCES])]
    assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [REFERENCES]).score, abs=1e-9)
    assert result["corpus"] == "mine" and result["source_form"].startswith(form)
    assert evaluate.metrics_key(result) == f"mine:val[{result['source_form']}]/greedy"


def translate_ids_of(tr, texts):
    from transformer.decoding import translate_ids

    return translate_ids(tr.model, tr.model.tokenizer.encode_batch(texts), method="greedy")
