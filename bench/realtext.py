"""Message texts like real ones, for the search benchmark (bench/search.py,
BENCH_SEED=real).

A vocabulary of VOCAB words (made of syllables, so that their trigrams
repeat across words as a language's do) and NAMES first names, used with
a Zipf-like frequency: the word of rank r is picked with a probability
proportional to 1/r, so a few words are in most messages and most words
in few. Each message has 3 to 12 words; about one word in 20 is a number.
Everything is a pure function of the message's number k, computed here
once: the seed loads these texts into the database (bench.py,
`bodies=`), and the benchmark counts what a search must find from them.

Standard library only.
"""

import random

VOCAB = 6000
NAMES = 300
# The Zipf table: word ranks spread over SLOTS slots, rank r over about
# SLOTS / (r * H) of them (at least one); a word is the rank of a slot.
SLOTS = 1 << 16
P = 2147483647  # 2^31 - 1: the hash's modulus

_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"
_FIRST = ("anna ben carla dmitri elena farid greta hugo ines jonas kemal lucia mateo nadia "
          "oskar paula quentin rosa samir tomas ulla viktor wanda xavier yusuf zora").split()


def _syllable(rng):
    return rng.choice(_CONSONANTS) + rng.choice(_VOWELS) + (rng.choice("nrsl") if rng.random() < 0.3 else "")


def _words(rng, n, taken):
    out = []
    while len(out) < n:
        w = "".join(_syllable(rng) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if len(w) >= 3 and w not in taken:
            taken.add(w)
            out.append(w)
    return out


def _vocabulary():
    rng = random.Random(61)
    taken = set()
    words = _words(rng, VOCAB, taken)
    # Names: the given ones, then more made like them; placed among the
    # words at every 20th rank (a name is neither the commonest nor rare).
    names = list(_FIRST)
    names += [w + rng.choice(("a", "o", "el", "in")) for w in _words(rng, NAMES - len(names), taken)]
    names = [n for n in names if n not in taken or n in _FIRST][:NAMES]
    ranked = []
    it = iter(names)
    for i, w in enumerate(words):
        if i % 20 == 19:
            n = next(it, None)
            if n is not None:
                ranked.append(n.capitalize())
        ranked.append(w)
    # Words never used: made the same way, so their trigrams are common.
    unused = _words(rng, 50, taken)
    return ranked, unused


RANKED, UNUSED = _vocabulary()


def _slots():
    h = sum(1.0 / r for r in range(1, len(RANKED) + 1))
    table = []
    for r in range(1, len(RANKED) + 1):
        table += [r - 1] * max(1, round(SLOTS / (r * h)))
    # Trimmed or padded with the rarest half to exactly SLOTS.
    if len(table) > SLOTS:
        table = table[:SLOTS]
    i = len(RANKED) // 2
    while len(table) < SLOTS:
        table.append(i)
        i = i + 1 if i + 1 < len(RANKED) else len(RANKED) // 2
    return table


TABLE = _slots()


def _h(k, j):
    x = (k * 131 + j * 7919 + 17) % P
    x = (x * 48271) % P
    return (x * 48271) % P


def body(k):
    """Message k's text."""
    n = 3 + _h(k, 999) % 10
    words = []
    for j in range(n):
        x = _h(k, j)
        if x % 20 == 0:
            words.append(str((x // 20) % 10000))
        else:
            words.append(RANKED[TABLE[(x // 20) % SLOTS]])
    return " ".join(words)


def folded(text):
    """As a send folds it (ASCII text: lowercased)."""
    return text.lower()


def terms():
    """(kind, term) for the benchmark: the commonest word; a word of rank
    3,000 (a few of the searcher's messages); the first name past rank
    1,000; a word of the same making found in no message (not even inside
    another word)."""
    lower = [w.lower() for w in RANKED]
    name = next(w for i, w in enumerate(RANKED) if i >= 1000 and w[0].isupper())
    none = next(w for w in UNUSED if len(w) >= 5 and not any(w in v for v in lower))
    return [("common", lower[0]), ("rare", lower[3000]), ("name", name.lower()), ("none", none)]
