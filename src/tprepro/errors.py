"""Errors that the command line reports as one clear line (no traceback)."""


class TpreproError(Exception):
    """Bad input or configuration; the message names the file, key or line."""



def suggestion(value: str, known) -> str:
    """"; did you mean 'y'?" when one of `known` is close to `value`, else ""."""
    import difflib

    close = difflib.get_close_matches(str(value), [str(k) for k in known], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(kind: str, value: str, known) -> str:
    """"unknown <kind> 'x'; did you mean 'y'? (known: a, b, ...)"."""
    known = list(known)
    return f"unknown {kind} {value!r}{suggestion(value, known)} (known: {', '.join(map(str, known))})"
