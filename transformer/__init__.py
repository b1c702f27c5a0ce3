"""A from-scratch encoder–decoder Transformer for translation, with attention you can look at."""
from .config import ModelConfig
from .model import Transformer
from .translator import Translation, Translator, load_pretrained

__all__ = ["ModelConfig", "Transformer", "Translation", "Translator", "load_pretrained"]
