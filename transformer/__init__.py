"""A from-scratch encoder–decoder Transformer for translation, with attention you can look at."""
from .arithmetic import pin_float_kernels

pin_float_kernels()  # before torch computes anything: see arithmetic.py

from .config import ModelConfig  # noqa: E402
from .model import Transformer  # noqa: E402
from .translator import Translation, Translator, load_pretrained  # noqa: E402

__all__ = ["ModelConfig", "Transformer", "Translation", "Translator", "load_pretrained"]
