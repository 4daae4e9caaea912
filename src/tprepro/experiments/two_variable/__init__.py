"""Wangperawong 2018: Transformer, UT and AUT on two-variable arithmetic (Table 3)."""
