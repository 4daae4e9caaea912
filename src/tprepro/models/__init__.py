"""Transformer, TP-Transformer, their variants and the TP-N2F models: config, registries, layers, probes.

Importing this package registers every binding, arch and preset.
"""

from tprepro.models import lstm, n2f, tpr_bindings, universal  # noqa: F401  (register bindings and archs)

from tprepro.models.binding import Binding, list_bindings, register_binding
from tprepro.models.config import ModelConfig
from tprepro.models.registry import (build_model, list_archs, list_presets, register_arch, register_preset,
                                     resolve_model_config)
from tprepro.models.transformer import TransformerModel

__all__ = [
    "Binding",
    "ModelConfig",
    "TransformerModel",
    "build_model",
    "list_archs",
    "list_bindings",
    "list_presets",
    "register_arch",
    "register_binding",
    "register_preset",
    "resolve_model_config",
]
