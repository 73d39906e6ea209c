"""A small real text set available offline: the first sentences of installed libraries' docstrings.

No text corpus ships with scikit-learn (``fetch_20newsgroups`` downloads), and nltk's corpora are not
installed. The docstrings of the installed libraries are real English sentences written by people;
the first sentence of each public function's or class's docstring, labelled by the field of the
library it comes from, makes a short-sentence topic classification task:

- graphs: ``networkx``
- statistics: ``scipy.stats``
- signal processing: ``scipy.signal``
- neural networks: ``torch.nn`` and ``torch.nn.functional``

Library names and reStructuredText markup are removed from the sentences (``:class:`torch.nn.Linear```
becomes ``Linear``), so that the label is not written in the text. Sentences found under two labels
are dropped. The sentences depend on the installed versions of these libraries (recorded in a
benchmark's provenance).
"""

import importlib
import inspect
import re

import numpy as np

SOURCES = {
    "graphs": ("networkx",),
    "statistics": ("scipy.stats",),
    "signal processing": ("scipy.signal",),
    "neural networks": ("torch.nn", "torch.nn.functional"),
}
_ROLE = re.compile(r":[a-z:]+:`~?([^`]*)`")
_NAMES = re.compile(r"\b(networkx|nx|scipy|torch|numpy|np)\b\.?", re.IGNORECASE)


def _clean(sentence):
    s = _ROLE.sub(lambda m: m.group(1).split(".")[-1].split("<")[0].strip(), sentence)
    s = s.replace("``", "").replace("`", "").replace("*", "")
    s = re.sub(r"\b(?:[A-Za-z_]\w*\.)+(\w+)", r"\1", s)  # dotted paths: keep the last name
    s = _NAMES.sub("", s)
    return re.sub(r"\s+", " ", s).strip()


def _first_sentences(module_name):
    module = importlib.import_module(module_name)
    out = set()
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if not callable(obj):
            continue
        doc = inspect.getdoc(obj)
        if not doc:
            continue
        paragraph = doc.strip().split("\n\n")[0].replace("\n", " ")
        sentence = _clean(re.split(r"(?<=\.)\s", paragraph)[0])
        if 4 <= len(sentence.split()) <= 30 and not sentence.startswith(">>>") and "(" not in sentence.split()[0]:
            out.add(sentence)
    return out


def docstring_sentences(n_per_class=150, random_state=0):
    """``(texts, labels, class_names)``: ``n_per_class`` sentences of each field (fewer when it has fewer).

    The sentences of each field are sorted and ``n_per_class`` of them drawn with ``random_state``,
    so the same installed libraries give the same set; ``n_per_class=None`` takes them all.
    """
    per_class = {label: set().union(*(_first_sentences(m) for m in modules)) for label, modules in SOURCES.items()}
    seen = {}
    for label, sentences in per_class.items():
        for s in sentences:
            seen.setdefault(s.lower(), set()).add(label)
    rng = np.random.RandomState(random_state)
    texts, labels = [], []
    names = list(SOURCES)
    for k, label in enumerate(names):
        pool = sorted(s for s in per_class[label] if len(seen[s.lower()]) == 1)
        pick = rng.choice(len(pool), size=min(n_per_class or len(pool), len(pool)), replace=False)
        texts += [pool[i] for i in sorted(pick)]
        labels += [k] * len(pick)
    return texts, np.array(labels), names
