"""Multiple-choice option strings of MathQA, read the way the released solver reads them.

Two ways to cut "a ) 24 , b ) 120 , c ) 625 , d ) 720 , e ) 1024" (or the list form
"['a ) 4', 'b ) 4 π', ...]" that 181 dev/test records use) into options:

- `split_options_faithful`: the solver's cut (strip quotes/brackets, double spaces
  become separators, split on ", "). A comma followed by a space inside an option
  ("1, 000") makes extra pieces; the solver scores by position in this list, so a
  stray piece shifts every later letter. Pieces without ")" get an "a)" prefix.
- `split_options`: this module's letter-aligned cut: the markers "a )" .. "e )" are
  searched in order, each after ", " (or at the start), so options may contain commas.

`option_value` reads one option like the solver's `find_non_numeric_values`:
1. spaces and quotes removed, lower case, the text after the first ")" kept;
2. a plain number ("24", "2.5", "3/4" -> 0.75, "7/0" -> 0, "one".."ten") is read
   directly (a ratio "3:4" is not: it goes on to step 3);
3. otherwise ~200 unit words and letters are deleted in a fixed order (plain
   substring deletion: "rs.", "kg", "percent", "%", "sq", ..., then every
   "s", "w", "a", "b", "c", "d", "e"), ":" becomes "/" (so "3 : 4" is 0.75),
   "sqrt"/"sqr" becomes "√", "×" becomes "*"; a trailing "." or "," goes; a
   number followed by one of m, s, h, l, o, c loses that letter;
4. "0" is 0; a plain number is read as in 2; "none"-like answers and answers
   holding "only", "and", "or", "&" are None; text without a digit is None;
   the rest (e.g. "4π", "2√3", "-5", "2^10") is rewritten (π -> *pi, √x ->
   sqrt(x), "2(" -> "2*(", "x=5" -> "5") and evaluated as arithmetic
   (expression.py); anything unreadable is None.
So a mixed number "13 1 / 2" reads 131/2 = 65.5 and "1 , 000" (spaced) cuts badly:
the script's behaviour, kept on purpose.
"""

from __future__ import annotations

import re

from tprepro.experiments.n2f.mathqa.expression import evaluate_expression

LETTERS = ("a", "b", "c", "d", "e")
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "hundred": 100, "thousand": 1000}
_CHECK_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# Step 3, in the solver's order: (old, new) rewrites first, then deletions.
_REWRITES = ((",", ""), (" ", ""), ("×", "*"), ("–", "-"), (":", "/"), ("sqrt", "√"), ("sqr", "√"), ("⁄", "/"))
_DELETIONS = """
a) b) c) d) e) inches cubic after m/s msqaure toys yards Â mtrs
dollars percent men grams trousers step/minute gms ways way balls ball coins coin liters -days m/sec
days day hrs hr seconds hour sec. sec litres gallons gallon
cm2*square cm² pim^2 % cm3 m3 cm2 m2 m³ °f
rd nd st am pm mps Â ° matches
$ rs. sqm cum squareinches degrees kg. th mangoes
s. sq.units cc m². gallons kg rs
kilometerssquared increase decrease minutes minute hours hour ways
cu.m feet sq.cm sqcms sq.metres ° cmcube
m^2 meters deficit excess
degree cm2*square squareinch years rounds kg
min mcube mÂ² blocks ft kg
miles mile sqcm a. b. c.
d. e. liters
units inces sq.
etres sq.. square ete cubes kg
cms cm mm km dm mâ²
mr ph by less games game ohms
seconds second squnit seedpackets more
lts rise cu percent times yards
are equalto m. additionaledging mtr
tiles mq colours metre rupees
centiqaure ofpetrol sec necklaces sq ts
seedpacket necklace remainder billion million s w a b c d e
""".split()
_UNIT_SUFFIXES = "mshloc"
_NONE_ANSWERS = frozenset({"noneohese", "none", "cannotbedred", "datainadequate", "noneofabove",
                           "noneoheabove", "noneohes"})
_NONE_PARTS = ("only", "and", "&", "or")


def split_options_faithful(text: str) -> list[str]:
    """The solver's list of option pieces (position = its option index)."""
    cleaned = (text.replace("u'", "").replace('"', "'").replace("'", "").replace("]", "")
               .replace("[", "").replace("  ", ", "))
    return [piece if ")" in piece else "a)" + piece for piece in cleaned.split(", ")]


def split_options(text: str) -> dict[str, str]:
    """Letter -> option text (without the "x )" marker); letters that are missing are absent."""
    cleaned = text.strip()
    if cleaned.startswith("[") and cleaned.endswith("]"):
        cleaned = re.sub(r"""(^\[\s*['"]|['"]\s*\]$)""", "", cleaned)
        cleaned = re.sub(r"""['"]\s*,\s*['"]""", " , ", cleaned)
    marks: list[tuple[str, int, int]] = []
    position = 0
    for letter in LETTERS:
        pattern = re.compile(rf"(?:^|,\s*){letter}\s*\)\s*")
        match = pattern.search(cleaned, position)
        if match is None:
            continue
        marks.append((letter, match.start(), match.end()))
        position = match.end()
    options: dict[str, str] = {}
    for i, (letter, _, body_start) in enumerate(marks):
        body_end = marks[i + 1][1] if i + 1 < len(marks) else len(cleaned)
        options[letter] = cleaned[body_start:body_end].strip().rstrip(",").strip()
    return options


def _is_plain_number(text: str) -> bool:
    if text in _CHECK_WORDS:
        return True
    if text.count(".") > 1:
        return False
    digits = text.replace(".", "").replace("/", "").replace(":", "")
    return digits.isdigit() and "²" not in digits


def _plain_value(word: str) -> float | None:
    try:
        if word in NUMBER_WORDS:
            return float(NUMBER_WORDS[word])
        if "/" in word:
            parts = word.split("/")
            if not parts[0] or not parts[1]:
                return float(word.replace("/", "").replace(".", ""))
            if int(parts[1].replace(".", "")) == 0:
                return 0.0
            return float(parts[0]) / float(parts[1])
        return float(word.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None  # the script would crash (e.g. float("³")); unreadable here


def _strip_units(text: str) -> str:
    for old, new in _REWRITES:
        text = text.replace(old, new)
    for word in _DELETIONS:
        text = text.replace(word, "")
    if text.endswith(".") or text.endswith(","):
        text = text[:-1]
    for letter in _UNIT_SUFFIXES:
        if re.fullmatch(rf"[√.0-9]+{letter}", text):
            text = text.replace(letter, "")
    return text


def _rewrite_pi(text: str) -> str:
    text = text.replace("∏", "π").replace("(π)", "(pi)").replace("√π", "√pi")
    if re.match(r".*[0-9]+pi", text):
        return text.replace("pi", "*pi")
    if re.match(r".*[0-9]+πr", text):
        return text.replace("π", "*pi*")
    if re.match(r".*/π", text):
        return text.replace("/π", "/pi")
    if re.match(r".*[0-9]+π", text):
        return text.replace("π", "*pi")
    if re.match(r".*[0-9]+[+∗]π", text):
        return text.replace("∗π", "*pi")
    if re.match(r".*\(π.*", text):
        return text.replace("π", "pi")
    if text.startswith("π"):
        return text.replace("π", "pi*")
    return text


def _rewrite_multiply(text: str) -> str:
    text = text.replace(")(", ")*(")
    for digit in "012345678":  # the script's range(0, 9) leaves out "9("
        text = text.replace(digit + "(", digit + "*(")
    return text


def _rewrite_sqrt(text: str) -> str:
    """√ -> sqrt( ... ): the argument ends at ")" or at the first non-digit after a digit."""
    out: list[str] = []
    inside = parenthesised = False
    last = ""
    for char in text:
        if char == "√":
            inside, last = True, ""
            out.append("sqrt(")
            continue
        if inside:
            if char == "(":
                parenthesised = True
                continue
            if char == ")":
                out.append(char if parenthesised else char + ")")
                inside = parenthesised = False
                last = ""
                continue
            if not ("0" <= char <= "9") and ("0" <= last <= "9" and last) and not parenthesised:
                out.append(")" + char)
                inside = parenthesised = False
                last = ""
                continue
            last = char
        out.append(char)
    if inside:
        out.append(")")
    result = "".join(out)
    if "sqr" in result and "sqrt" not in result:
        result = result.replace("sqr", "sqrt")
    if re.match(r".*[0-9]+sqrt.*", result):
        result = result.replace("sqrt", "*sqrt")
    return result


def _rewrite_equality(text: str) -> str:
    return text[text.index("=") + 1:] if re.match(r"[a-z]=[0-9]+", text) else text


def option_value(option: str) -> float | None:
    """Numeric value of one option ("c ) 625", "b ) 3 : 4", "d ) 4 π cm"), or None."""
    text = option.replace("'", "").replace(" ", "").lower()
    for letter in reversed(LETTERS):
        text = text.replace(f"{letter}){letter})", f"{letter})")
    if ")" in text:
        text = text[text.index(")") + 1:]
    if _is_plain_number(text) and ":" not in text and "⁶" not in text:
        return _plain_value(text)
    text = _strip_units(text)
    if text == "0":
        return 0.0
    if _is_plain_number(text):
        return _plain_value(text)
    if text in _NONE_ANSWERS or any(part in text for part in _NONE_PARTS):
        return None
    if not any("0" <= char <= "9" for char in text):
        return None
    expression = _rewrite_equality(_rewrite_sqrt(_rewrite_multiply(_rewrite_pi(text))))
    return evaluate_expression(expression.replace("−", "-"))


def option_values_faithful(text: str) -> list[float | None]:
    """Values in the solver's positional list (see split_options_faithful)."""
    return [option_value(piece.replace(" ", "")) for piece in split_options_faithful(text)]


def parse_options(text: str) -> dict[str, float | None]:
    """Letter -> value (None when the option holds no readable number)."""
    return {letter: option_value(f"{letter} ) {body}") for letter, body in split_options(text).items()}
