"""Encoder-only heads learn small tasks; pooling ignores padding."""
from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from transformer.config import ModelConfig
from transformer.heads import ClassificationHead, RegressionHead, mean_pool
from transformer.model import Transformer

VOCAB, FIRST, PAD = 12, 4, 0  # tokens 4..11


def random_sequences(n: int, seed: int, min_len: int = 3, max_len: int = 10) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(FIRST, VOCAB) for _ in range(rng.randint(min_len, max_len))] for _ in range(n)]


def pad(seqs: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(seqs), max(map(len, seqs))), PAD)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out


def contains_seven_data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Balanced: half the sequences hold at least one 7, the other half none."""
    rng = random.Random(seed)
    seqs, labels = [], []
    for i, s in enumerate(random_sequences(n, seed)):
        s = [t if t != 7 else 8 for t in s]
        if i % 2:
            s[rng.randrange(len(s))] = 7
        seqs.append(s)
        labels.append(i % 2)
    return pad(seqs), torch.tensor(labels)


def fraction_of_fives_data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    rng = random.Random(seed)
    seqs = []
    for s in random_sequences(n, seed):
        p = rng.random()  # spread the targets over [0, 1]
        seqs.append([5 if rng.random() < p else t for t in s])
    return pad(seqs), torch.tensor([sum(t == 5 for t in s) / len(s) for s in seqs])


def encoder(seed: int) -> Transformer:
    """A one-layer encoder-only model (no decoder layers), d_model 32."""
    torch.manual_seed(seed)
    return Transformer(ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=32, n_heads=4, n_encoder_layers=1,
                                   n_decoder_layers=0, d_ff=64, dropout=0.0, max_len=32))


def train(head, x, y, loss_fn, steps: int, lr: float = 3e-3, batch: int = 64) -> None:
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(0)
    head.train()
    for _ in range(steps):
        idx = torch.randint(0, x.size(0), (batch,), generator=gen)
        loss = loss_fn(head(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    head.eval()


def test_classification_head_learns_contains_token_seven():
    x, y = contains_seven_data(1024, seed=0)
    x_test, y_test = contains_seven_data(400, seed=1)
    head = ClassificationHead(encoder(0), n_classes=2)
    with torch.no_grad():
        before = (head(x_test).argmax(-1) == y_test).float().mean().item()
    train(head, x, y, F.cross_entropy, steps=250)
    with torch.no_grad():
        logits = head(x_test)
    assert logits.shape == (400, 2)
    accuracy = (logits.argmax(-1) == y_test).float().mean().item()
    print(f"\n[heads] contains-7 accuracy {before:.3f} -> {accuracy:.3f}")
    assert accuracy >= 0.95


def test_regression_head_learns_fraction_of_fives():
    x, y = fraction_of_fives_data(1024, seed=2)
    x_test, y_test = fraction_of_fives_data(400, seed=3)
    head = RegressionHead(encoder(1))
    train(head, x, y, F.mse_loss, steps=250)
    with torch.no_grad():
        pred = head(x_test)
    assert pred.shape == (400,)
    mse = F.mse_loss(pred, y_test).item()
    r2 = 1 - mse / y_test.var(unbiased=False).item()
    print(f"\n[heads] fraction-of-5 regression: MSE {mse:.4f}, R^2 {r2:.3f}")
    assert r2 >= 0.9


def test_heads_ignore_padding_and_shapes():
    model = encoder(2).eval()
    cls = ClassificationHead(model, n_classes=3).eval()
    reg = RegressionHead(model, n_outputs=2).eval()
    seq = torch.tensor([[5, 9, 7, 4]])
    padded = torch.tensor([[5, 9, 7, 4, 0, 0, 0], [6, 0, 0, 0, 0, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(cls(padded)[:1], cls(seq), rtol=0, atol=1e-5)
        assert cls(padded).shape == (2, 3)
        assert reg(padded).shape == (2, 2)
        assert RegressionHead(model).eval()(padded).shape == (2,)
    # the pooled vector is the mean of the real positions only
    hidden = torch.arange(12.0).view(1, 3, 4)
    mask = torch.tensor([[True, True, False]])
    torch.testing.assert_close(mean_pool(hidden, mask), torch.tensor([[2.0, 3.0, 4.0, 5.0]]))
    # an all-padding row does not produce NaN
    assert torch.isfinite(mean_pool(hidden, torch.zeros(1, 3, dtype=torch.bool))).all()


def test_head_fine_tunes_the_encoder():
    model = encoder(3)
    head = ClassificationHead(model, n_classes=2)
    assert any(p is model.src_embed.weight for p in head.parameters())
    before = model.encoder.layers[0].self_attn.q_proj.weight.clone()
    x, y = contains_seven_data(64, seed=4)
    train(head, x, y, F.cross_entropy, steps=2)
    assert not torch.equal(before, model.encoder.layers[0].self_attn.q_proj.weight)
