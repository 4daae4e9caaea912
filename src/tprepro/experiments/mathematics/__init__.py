"""Schlag et al.: TP-Transformer vs Transformer on the DeepMind Mathematics Dataset (Table 1, Fig. 2)."""
